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

"""Unit tests (tox -e py3): each test_<part> module tests one part.

The helpers beside them:

recorded_cloud        the single-host cloud's client answers, replayed.
prox_replay           a PROX control socket replaying recorded replies.
tosca_cases           the TOSCA presets, translated and realised once.
vnf_runtime_fakes     fake guests for the VNF runtime: sysfs, a kernel.
vnf_runtime_fixtures  config drives made from the shipped templates.
"""
