# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""HOT templates through Heat's own engine, without a cloud.

Owns reading templates as the Heat client uploads them and resolving a
stack as Heat would create it; which shipped template and preset to use.

files     loads a template with its environments and nested files, as
          `openstack stack create` would upload them (or takes what Heat
          holds for a created stack: from_heat).
memo      parses each text once per process (every check of a run reads
          the same tree), handing each caller its own copy.
nested    validates each distinct nested stack once per process and
          replays what it found.
offline   sets Heat's engine up in-process with the cloud-only parts
          (service catalogue, clients, lookup constraints) neutralised.
realise   walks a parsed stack in dependency order, giving every resource
          synthetic IDs and attributes so that Heat resolves every
          intrinsic function, nested stacks included.
resolve   a stack as Heat would create it: realisation, topology and
          parameters (validation/check.py adds the rules).
shipped   the shipped templates and presets; chain.yaml's defaults.
tree      which files a template may pull in: its own tree, no URL.
"""
