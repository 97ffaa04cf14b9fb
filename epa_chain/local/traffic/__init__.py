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

"""The AF_PACKET generator's traffic: senders and receivers.

The generator (epa_chain.local.afpacket) runs each trial as two forked
processes - one sender for every stream, one receiver for every
receiving endpoint - on sockets opened inside the test bed's network
namespace.

- `frames`: the frames (Ethernet/IPv4/UDP, signature, tag, sequence,
  transmit time), built once and patched per send.
- `pacing`: the schedule (frame i at t0 + i / rate) and offered rates.
- `sender`: the sending loop.
- `receiver`: the receiving loop, counters and one-way delays.
- `results`: a trial's reports as a measurement.trial result.
- `sockets`: AF_PACKET sockets, MTU, kernel drop statistics.
- `netns`: run a function inside a network namespace.
- `workers`: the forked sender and receiver processes.
"""
