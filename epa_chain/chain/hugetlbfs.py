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

"""hugetlbfs mounts as /proc/mounts shows them, on a host and in a guest.

The VNF runtime mounts one for its engine if none of the page size is;
the local bed mounts its own and checks it before and after. Both read
the mount table with this module.
"""


def mounts(table='/proc/mounts'):
    """Mount point -> options of every hugetlbfs mount."""
    found = {}
    try:
        with open(table) as stream:
            for line in stream:
                fields = line.split()
                if len(fields) >= 4 and fields[2] == 'hugetlbfs':
                    found[_unescape_mount_field(fields[1])] = fields[3]
    except OSError:
        pass
    return found


def page_kb_of(options):
    """The page size of hugetlbfs mount options in kB; None: the default."""
    for option in options.split(','):
        if option.startswith('pagesize='):
            return _size_kb(option[len('pagesize='):])
    return None


def _unescape_mount_field(field):
    # /proc/mounts writes space, tab, newline and backslash as octal.
    for code, char in (('\\040', ' '), ('\\011', '\t'), ('\\012', '\n'),
                       ('\\134', '\\')):
        field = field.replace(code, char)
    return field


def _size_kb(text):
    """'2M' or '1024M' or '1G' (as /proc/mounts shows them) -> kB."""
    units = {'K': 1, 'M': 1024, 'G': 1024 * 1024}
    try:
        return int(text[:-1]) * units[text[-1].upper()]
    except (KeyError, ValueError, IndexError):
        return None
