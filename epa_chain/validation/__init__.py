"""Offline validation: Heat's own checks, then the NFV rules Heat lacks."""
