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

"""One finding model: validation, preflight, audit and KPI verdicts.

Each source keeps the words its users know (preflight's `blocks`, the
audit's `invalidates`, a KPI's `MISSED`) and maps them onto one scale,
worst first: fails, warns, unanswered, passes. A Finding is one
subject's word, message and fix, with the source's own detail columns;
one pass rule, one JSON shape (SCHEMA) and one console table serve all
four. The JSON keeps every key the source wrote before (its word under
its own key, 'verdict' or 'severity', and its details), so readers of
the source's own schema keep working; the common keys are added. The
KPI record inside a results document took the shape with results/2
(the KPI file moved to 'kpi_file'); results/1 documents still read.
"""

import dataclasses
import typing

SCHEMA = 'epa-chain/findings/1'
FAILS, WARNS, UNANSWERED, PASSES = 'fails', 'warns', 'unanswered', 'passes'
# The scale, worst first.
LEVELS = (FAILS, WARNS, UNANSWERED, PASSES)
# The console table's last column: a sentence, not padded.
WHAT = 'WHAT / FIX'


@dataclasses.dataclass(frozen=True)
class Source:
    """Who finds: its schema, its words and how its findings pass."""

    name: str
    # The schema of the source's own document ('epa-chain/audit/1').
    schema: str
    # ((word, level), ...), worst first: the words users know.
    words: typing.Tuple[typing.Tuple[str, str], ...]
    # The JSON key under which the source writes its word.
    word_key: str
    # ((detail key or 'subject', console header), ...): the columns
    # before the word.
    columns: typing.Tuple[typing.Tuple[str, str], ...] = ()
    # Whether nothing found passes (a template with no finding is clean;
    # an audit that read nothing is not).
    empty_passes: bool = False
    # Whether a finding nobody could answer passes (a KPI not shown
    # fails; a check validation skips offline passes).
    unanswered_passes: bool = True

    def level(self, word):
        """The scale level of `word`; ValueError names the source's words."""
        for known, level in self.words:
            if known == word:
                return level
        raise ValueError('%s: %s %r is not one of %s; fix: use one of them'
                         % (self.name, self.word_key, word,
                            ', '.join(w for w, _ in self.words)))


@dataclasses.dataclass(frozen=True)
class Finding:
    """One subject's word on one scale, what was found and the fix."""

    source: Source
    subject: str
    word: str
    message: str
    fix: str = ''
    # ((key, text), ...) in the source's column order.
    details: typing.Tuple[typing.Tuple[str, str], ...] = ()

    def __post_init__(self):
        self.source.level(self.word)

    @property
    def level(self):
        return self.source.level(self.word)

    def detail(self, key):
        return dict(self.details).get(key, '')

    def as_dict(self):
        """The one JSON shape: common keys, the source's word and details."""
        shaped = {'subject': self.subject, 'level': self.level,
                  'message': self.message, 'fix': self.fix}
        shaped.update(self.details)
        shaped[self.source.word_key] = self.word
        return shaped


def counts(found):
    """{level: how many findings}, every level of the scale."""
    return {level: sum(f.level == level for f in found) for level in LEVELS}


def passed(source, found):
    """The one pass rule: nothing fails, and what must be shown is."""
    levels = {f.level for f in found}
    if not levels:
        return source.empty_passes
    return FAILS not in levels and (source.unanswered_passes or
                                    UNANSWERED not in levels)


def document(source, found, verdict=None, **fields):
    """The JSON document of `found`, in the one shape (SCHEMA).

    'schema' stays the source's own (its readers check it first);
    `verdict` overrides the pass rule where the source's gate is
    stricter (preflight fails closed per check); `fields` are the
    source's own top-level keys.
    """
    shaped = dict(fields)
    shaped.update({
        'schema': source.schema, 'findings_schema': SCHEMA,
        'source': source.name,
        'passed': passed(source, found) if verdict is None else verdict,
        'counts': counts(found),
        'findings': [f.as_dict() for f in found]})
    return shaped


def grid(source, found):
    """(headers, rows) of `found`: details, the word, what and the fix."""
    headers = [header for _, header in source.columns]
    headers += [source.word_key.upper(), WHAT]
    rows = [[f.subject if key == 'subject' else f.detail(key)
             for key, _ in source.columns] +
            [f.word.upper(), f.message + ('; fix: ' + f.fix if f.fix
                                          else '')] for f in found]
    return headers, rows


def table(source, found):
    """`found` as a console table, in the order given."""
    headers, rows = grid(source, found)
    return columns(headers, rows)


def columns(header, rows):
    """`header` and `rows` (tuples of str) as lines of aligned text.

    The last column holds a sentence, so only the columns before it are
    padded.
    """
    table_ = [tuple(header)] + [tuple(row) for row in rows]
    widths = [max(len(row[i]) for row in table_)
              for i in range(len(header) - 1)]
    return '\n'.join('  '.join([cell.ljust(width) for cell, width in
                                zip(row, widths)] + [row[-1]]).rstrip()
                     for row in table_)


# The EPA audit's vocabulary (cloud/audit_model.py finds, the results
# report renders what a run recorded). An audit that read nothing is
# not valid.
AUDIT = Source(
    'audit', 'epa-chain/audit/1', (('invalidates', FAILS), ('warning', WARNS),
                                   ('info', PASSES)),
    'severity', (('server', 'SERVER'), ('aspect', 'ASPECT'),
                 ('asked', 'ASKED'), ('given', 'GIVEN')))


def recorded(source, shaped):
    """The Finding a document recorded (old documents: the source's keys).

    `shaped` holds the source's word key and detail keys; the subject is
    the first detail, the message 'message' (or 'note').
    """
    details = tuple((key, str(shaped.get(key, '')))
                    for key, _ in source.columns)
    return Finding(source, str(shaped.get('subject', details[0][1])),
                   shaped[source.word_key],
                   str(shaped.get('message', shaped.get('note', ''))),
                   str(shaped.get('fix', '')), details)
