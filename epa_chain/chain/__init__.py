"""The service chain as the VNFs see it: node configuration and topology."""
