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

"""The proof document: what `epa-chain prove --json` writes, and reads back.

Its one owner: the schema name, the keys prove records (stack, proven,
error, findings, servers, placement, ready_after_s, boot,
vnf_control_endpoints, vnf_tasks, directions with their hop counts) and
the reading `epa-chain measure --loss-by-hop PROOF` does of it: the hops
of each direction and the chain's parked VNFs.
"""

import json

from epa_chain.cloud import hop_check
from epa_chain.cloud import ovs_hops
from epa_chain.cloud import vnf_tasks
from epa_chain.measurement import results
from epa_chain import outputs

SCHEMA = 'epa-chain/proof/1'
FIX = ('give the --json file of `epa-chain prove` (run without --no-ovs) '
       'for the stack measured')


def new(stack):
    """The proof of `stack` before anything is known: not proven."""
    return {'schema': SCHEMA, 'stack': stack, 'proven': False}


def record_parked(proof, parked):
    """Keep the parked VNFs: measure --loss-by-hop starts them again."""
    proof['vnf_control_endpoints'] = {
        e.node: {'host': e.host, 'port': e.port} for e in parked}


def direction_entry(checked, hops, counts=None):
    """A direction's entry: its hop check, trial and (OVS) hop counts.

    `counts` are the last attempt's ovs_hops.HopCount, None without OVS.
    """
    spec = checked.result.spec
    entry = dict(checked.as_dict(), frame_size=spec.profile.frame_size.size,
                 load_fps=spec.load_fps, duration_s=spec.duration_s,
                 hops=hop_check.describe_path(hops))
    if counts is not None:
        entry['hop_counts'] = [count.as_dict() for count in counts]
    return entry


def write(proof, path, option='--json'):
    """Write the proof as JSON to `path` ("-": standard output)."""
    outputs.write_text(path, json.dumps(proof, indent=2, sort_keys=True,
                                        allow_nan=False) + '\n',
                       option, allow_stdout=True)


def _read(path, option):
    try:
        document = results.parse(results.read_text(path, FIX, 'proof'),
                                 option, FIX)
    except results.ResultsError as error:
        raise ValueError('--loss-by-hop: %s' % error)
    if not isinstance(document, dict) or document.get('schema') != SCHEMA:
        raise ValueError('%s: schema is %r, not %s; %s' % (
            option, document.get('schema') if isinstance(document, dict)
            else None, SCHEMA, FIX))
    return document


def proven_chain(path, directions):
    """The hops of each measured direction, and the parked VNFs.

    From the proof file at `path` (--loss-by-hop); ValueError naming
    the option and the field. Chain 0's, with several chains.
    """
    option = '--loss-by-hop %s' % path
    return _proven(_read(path, option), option, directions)


def proven_chains(path, directions):
    """[(paths, parked VNFs)] of every chain the proof proved, in order.

    A proof of one chain (or of an older epa-chain) is one entry.
    """
    option = '--loss-by-hop %s' % path
    document = _read(path, option)
    chains = document.get('chains')
    if not isinstance(chains, list) or len(chains) < 2:
        return [_proven(document, option, directions)]
    return [_proven(chain, '%s chains[%d]' % (option, index), directions)
            if isinstance(chain, dict) else _not_a_chain(option, index)
            for index, chain in enumerate(chains)]


def _not_a_chain(option, index):
    raise ValueError('%s: chains[%d] is not what prove writes; %s'
                     % (option, index, FIX))


def _proven(document, option, directions):
    """(paths, parked VNFs) of one chain's proof entries."""
    entries = document.get('directions')
    try:
        paths = ovs_hops.loss_paths(entries if isinstance(entries, list)
                                    else [])
    except (KeyError, TypeError, AttributeError) as error:
        raise ValueError('%s: directions[].hop_counts is not what prove '
                         'writes (%s); %s' % (option, error, FIX))
    missing = [d for d in directions if d not in paths]
    if missing:
        raise ValueError('%s: no hop counts for the %s direction; %s' % (
            option, ', '.join(missing), FIX))
    try:
        parked = vnf_tasks.endpoints(document)
    except (TypeError, ValueError, AttributeError) as error:
        raise ValueError('%s: vnf_control_endpoints is not what prove '
                         'writes (%s); %s' % (option, error, FIX))
    return paths, parked
