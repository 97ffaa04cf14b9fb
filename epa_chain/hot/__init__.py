"""HOT templates through Heat's own engine, without a cloud.

files     loads a template with its environments and nested files, as
          `openstack stack create` would upload them.
offline   sets Heat's engine up in-process with the cloud-only parts
          (service catalogue, clients, lookup constraints) neutralised.
realise   walks a parsed stack in dependency order, giving every resource
          synthetic IDs and attributes so that Heat resolves every
          intrinsic function, nested stacks included.
"""
