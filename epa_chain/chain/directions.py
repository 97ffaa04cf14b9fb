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

"""The chain's two directions, and every way a user spells a choice of them.

forward runs from the generator's (or tester's) port on net0 through VNF1,
VNF2, ... to the last segment; reverse runs back. A run measures one
direction (unidirectional) or both at once (bidirectional): inside the
package that choice is a tuple of directions, parsed once where a user
wrote it, whatever the front end (the command line's uni/bi, Tempest's and
the templates' words, a results file's list).
"""

FORWARD = 'forward'
REVERSE = 'reverse'
DIRECTIONS = (FORWARD, REVERSE)

UNIDIRECTIONAL = (FORWARD,)
BIDIRECTIONAL = (FORWARD, REVERSE)
# How chain.yaml's `direction` parameter, the presets' file names and the
# Tempest scenarios spell each choice.
WORDS = {UNIDIRECTIONAL: 'unidirectional', BIDIRECTIONAL: 'bidirectional'}
SPELLINGS = {
    'uni': UNIDIRECTIONAL, 'unidir': UNIDIRECTIONAL,
    'unidirectional': UNIDIRECTIONAL, 'forward': UNIDIRECTIONAL,
    'bi': BIDIRECTIONAL, 'bidir': BIDIRECTIONAL,
    'bidirectional': BIDIRECTIONAL, 'forward,reverse': BIDIRECTIONAL,
}
HELP = ('uni (or unidir, unidirectional, forward) or bi (or bidir, '
        'bidirectional, forward,reverse)')


def parse(value):
    """UNIDIRECTIONAL or BIDIRECTIONAL from any spelling in use.

    Accepts uni/bi, unidir/bidir, unidirectional/bidirectional (any case)
    and the tuples themselves; ValueError saying what to give otherwise.
    """
    if isinstance(value, str):
        key = ','.join(part.strip() for part in value.lower().split(','))
    else:
        key = ','.join(value or ())
    try:
        return SPELLINGS[key]
    except (KeyError, TypeError):
        raise ValueError('give %s' % HELP) from None


def word(directions):
    """'unidirectional' or 'bidirectional'."""
    return WORDS[parse(directions)]
