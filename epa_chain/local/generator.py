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

"""Deprecated: the AF_PACKET generator is epa_chain.local.afpacket now.

`LocalGenerator` is `afpacket.AfPacketGenerator`; kept for a release.
"""

import warnings

from epa_chain.local import afpacket

warnings.warn('epa_chain.local.generator is epa_chain.local.afpacket now '
              '(LocalGenerator: AfPacketGenerator)', DeprecationWarning,
              stacklevel=2)

Endpoint = afpacket.Endpoint
Stream = afpacket.Stream
LocalGenerator = afpacket.AfPacketGenerator
