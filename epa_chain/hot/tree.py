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

"""Which files a template may pull in: its own directory tree, no URL.

`openstack stack create` uploads every file a template set names (nested
template types, get_file, the resource_registry entries of environments)
into the stack, where its servers can read them; a TOSCA service template
pulls in its imports. A template from elsewhere could so carry a host's
/etc/shadow or SSH keys into a cloud, or make the client fetch a URL.

The rule: the files a user names on the command line (the template, the
-e environments, TOSCA inputs) are read where they are. Every file they
reference must be inside the directory tree of the top-level template (its
directory and below, symbolic links resolved), environments included: the
shipped templates/environments/*.yaml may refer to ../lib/*.yaml, inside
templates/. Nor may it be hidden (a dot-file, or in a dot-directory such
as .ssh/ or .git/ of a template kept in a home directory or a clone), and
a template in / has no tree. --allow-files-outside lifts the rule; nothing
lifts the other one: a URL (http, https, ftp, a file:// URL naming another
host, ...) is never fetched.
"""

import os
from urllib import parse as urlparse

from epa_chain import safe_yaml

ALLOW_OPTION = '--allow-files-outside'
URL_FIX = ('download the file next to the one that uses it and name it by '
           'a relative path')
ALLOW_HELP = ('read files that templates reference (nested types, get_file, '
              'resource_registry entries, TOSCA imports) from outside the '
              'top-level template\'s directory tree; URLs are never fetched')


class Tree:
    """The directory tree of a top-level template (or service template)."""

    def __init__(self, top_file, allow_outside=False):
        self.root = os.path.dirname(os.path.realpath(top_file))
        self.allow_outside = allow_outside

    def url(self, url, referrer, field, value):
        """The real local path a reference names, once joined to its base.

        `url` is what heatclient makes of `value` (written at `field` of
        the file `referrer`): file:// or another scheme.
        """
        parts = urlparse.urlsplit(url)
        if parts.scheme != 'file' or parts.netloc not in ('', 'localhost'):
            raise refuse_url(referrer, field, value)
        return self.path(urlparse.unquote(parts.path), referrer, field,
                         value)

    def path(self, path, referrer, field, value):
        """The real path of a local reference; InputError if outside."""
        try:
            real = os.path.realpath(path)
        except ValueError as exc:    # a NUL byte
            raise safe_yaml.InputError(referrer, '%s %r: %s' % (
                field, value, exc), 'give a file path')
        if self.allow_outside:
            return real
        if not inside(real, self.root) or self.root == os.sep:
            raise safe_yaml.InputError(
                referrer, '%s %s: %s is outside the template\'s directory '
                'tree %s' % (field, value, real, _slash(self.root)),
                'keep every file a template uses under %s, or pass %s'
                % (_slash(self.root), ALLOW_OPTION))
        if any(part.startswith('.') for part in os.path.relpath(
                real, self.root).split(os.sep) if part != '.'):
            raise safe_yaml.InputError(
                referrer, '%s %s: %s is hidden (a dot-file, or in a '
                'dot-directory)' % (field, value, real),
                'use a file that is not hidden, or pass %s' % ALLOW_OPTION)
        return real


def _slash(directory):
    return directory.rstrip(os.sep) + os.sep


def inside(path, root):
    """Whether a real path is root or below it."""
    return os.path.commonpath([path, root]) == root


def is_url(value):
    """A reference with a scheme (http:, file:, ...) rather than a path."""
    return bool(urlparse.urlsplit(value).scheme)


def refuse_url(referrer, field, value):
    return safe_yaml.InputError(
        referrer, '%s %s: a URL, and epa-chain fetches nothing' % (
            field, value), URL_FIX)
