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

"""TOSCA service templates translated to HOT by the upstream translator.

Owns `epa-chain translate`'s work: reading a service template, the chain
it describes, what heat-translator loses and its repair, and the check
that a translation equals the HOT preset it mirrors.

errors       a problem in a template, addressed to its node and field.
imports      a template's imports, read and checked before tosca-parser.
loader       parses a service template and its inputs with tosca-parser and
             turns its errors into ones naming the node and the field;
             fills in chain.yaml's default for an optional input.
model        reads the chain out of the parsed template: segments, nodes,
             ports, the MAC chain, management access; checks it is a chain.
repairs      one function per thing heat-translator loses, each putting it
             back into heat-translator's HOT from the model.
chains       chain K of chain_count, unrolled from chain 0 (TOSCA cannot
             repeat a topology).
translate    runs tosca-parser, heat-translator, then the repairs.
equivalence  a realised stack as a graph free of names and synthetic IDs,
             to compare a translation with the HOT preset it mirrors.
"""
