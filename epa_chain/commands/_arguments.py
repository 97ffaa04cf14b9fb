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

"""Argument text shared by the commands, turned into typed values once.

Not a command (cli.py skips modules starting with '_'): what `epa-chain
measure` and `epa-chain local` (and tools/compare_searches.py) both
parse. Every ValueError names the option as the user wrote it.

The Campaign is built here, at the command line's edge, as the Tempest
front end builds it in epa_chain/cloud/options.py: measurement/campaign.py
imports measurement/options.py, so the table cannot build the Campaign
without an import circle.
"""

import ipaddress
import re

from epa_chain.generators import options as generator_options
from epa_chain.measurement import options as campaign_options

# A host name (RFC 1123 labels) or an IP address; never an option.
_HOST_NAME = re.compile(r'(?=.{1,253}\Z)[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                        r'[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}'
                        r'[A-Za-z0-9])?)*\.?')
_PORT = re.compile(r'[0-9]{1,5}')


def parse_pairs(pairs, option, example, convert=str):
    """KEY=VALUE items of a repeatable option, as a dict."""
    found = {}
    for pair in pairs:
        key, sep, value = pair.partition('=')
        if not sep or not key.strip():
            raise ValueError('%s %r: give KEY=VALUE, e.g. %s'
                             % (option, pair, example))
        found[key.strip()] = convert(value.strip())
    return found


def parse_endpoint(text, option='--prox-endpoint'):
    """(host, port) of HOST:PORT, [IPv6]:PORT; ValueError names `option`."""
    fix = ('give HOST:PORT with a port in 1-65535, e.g. 10.0.0.5:8474 or '
           '[fd00::5]:8474')
    host, sep, port = text.rpartition(':')
    if not sep or not _PORT.fullmatch(port) or not 1 <= int(port) <= 65535:
        raise ValueError('%s %r: %s' % (option, text, fix))
    bracketed = host.startswith('[') and host.endswith(']')
    if bracketed:
        host = host[1:-1]
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None and not _HOST_NAME.fullmatch(host):
        raise ValueError('%s %r: %r is neither an IP address nor a host '
                         'name; %s' % (option, text, host, fix))
    if address is not None and address.version == 6 and not bracketed:
        raise ValueError('%s %r: write an IPv6 address in brackets; %s'
                         % (option, text, fix))
    return host, int(port)


def option_message(error, text):
    """A generator's OptionError as the command line spells it."""
    return '--generator-option %s=%s: %s' % (error.name, text, error.fix)


def parse_generator_options(pairs, prox_endpoint=None, generator='model'):
    """The generator's keyword arguments: typed, checked, named.

    `pairs` are --generator-option KEY=VALUE items of `generator`; host
    and port come from `prox_endpoint` (HOST:PORT) when given.
    """
    texts = parse_pairs(pairs, '--generator-option', 'link_bps=1e9')
    try:
        options = generator_options.from_text(generator, texts)
    except generator_options.OptionError as error:
        raise ValueError(option_message(error, texts[error.name])) from None
    if prox_endpoint:
        options['host'], options['port'] = parse_endpoint(prox_endpoint)
    return options


def campaign_from_arguments(args, front_end=campaign_options.MEASURE,
                            **fixed):
    """The Campaign of the parsed options; ValueError names the option.

    `fixed` are fields the command sets itself (e.g. the chain length).
    """
    # Imported here: the CLI loads every command module at start.
    from epa_chain.measurement import campaign

    try:
        values = campaign_options.values_from_arguments(args, front_end)
        values.update(fixed)
        return campaign.Campaign(**values)
    except campaign_options.FieldError as error:
        raise ValueError(campaign_options.cli_message(error, args)) from None
