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

"""Findings as a console table: aligned columns, a free last column.

The last column holds a sentence (what was found, the fix), so only the
columns before it are padded; the measurement report's pipe tables are
for figures.
"""


def columns(header, rows):
    """`header` and `rows` (tuples of str) as lines of aligned text."""
    table = [tuple(header)] + [tuple(row) for row in rows]
    widths = [max(len(row[i]) for row in table)
              for i in range(len(header) - 1)]
    return '\n'.join('  '.join([cell.ljust(width) for cell, width in
                                zip(row, widths)] + [row[-1]]).rstrip()
                     for row in table)
