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

"""Translate a TOSCA service template to HOT with heat-translator, repaired.

tosca-parser parses the template and its inputs, heat-translator translates
it, then epa-chain puts back what heat-translator loses: provider VLAN
networks, flavor extra specs, port security, the MAC chain in user_data,
config drive, server names, the chain outputs (doc/source/tosca.rst lists
every repair). The inputs become the HOT parameters' defaults. Imports
must be inside the template's directory tree; URLs are never fetched.
Exit status: 0 translated (and valid, with --validate), 1 the template is
broken (one line on stderr per problem: file, node, field, fix) or the
result invalid, 2 usage (a file that cannot be read or is refused, an
output that cannot be written: one line on stderr).

  epa-chain translate tosca/pvp.yaml -i tosca/presets/pvp-bidir.yaml -o x.yaml
  epa-chain translate tosca/vecpe.yaml -o - --validate -v
"""

import importlib.util
import json
import os
import sys
import tempfile

from epa_chain.hot import tree
from epa_chain import outputs
from epa_chain import safe_yaml

OUTPUT_OPTION = '-o'


def add_arguments(parser):
    parser.add_argument('template', metavar='FILE',
                        help='TOSCA service template (tosca/*.yaml)')
    parser.add_argument('-i', '--inputs', metavar='INPUTS',
                        help='YAML file of input values (tosca/presets/)')
    parser.add_argument(OUTPUT_OPTION, '--output', metavar='OUT',
                        required=True,
                        help='HOT template to write; - for stdout')
    parser.add_argument('--validate', action='store_true',
                        help='validate the result as `epa-chain validate` '
                             'does (needs the validation extra)')
    parser.add_argument('--json', action='store_true',
                        help='report (repairs, errors) as JSON on stderr')
    parser.add_argument('-v', '--verbose', action='store_true',
                        help='list every change each repair made and what '
                             'heat-translator logged')
    parser.add_argument(tree.ALLOW_OPTION, action='store_true',
                        help=tree.ALLOW_HELP)


def run(args):
    missing = [name for name in ('toscaparser', 'translator')
               if importlib.util.find_spec(name) is None]
    if missing:
        print('epa-chain translate needs tosca-parser and heat-translator '
              '(pip install \'epa-chain[translation]\'); missing: %s'
              % ', '.join(missing), file=sys.stderr)
        return 2
    try:
        _plain_name(args.output)
        outputs.check_file(args.output, OUTPUT_OPTION, allow_stdout=True)
        _not_an_input(args.output, args.template, args.inputs)
    except ValueError as exc:
        return _refuse(exc)
    # Imported here: tosca-parser and heat-translator take a second to load
    # and other subcommands do not need them.
    from epa_chain.tosca import errors
    from epa_chain.tosca import translate

    try:
        result = translate.translate(args.template, args.inputs,
                                     args.allow_files_outside)
    except safe_yaml.InputError as exc:
        return _refuse(exc)
    except errors.ToscaError as exc:
        _report_problems(exc.problems, args.json)
        return 1
    text = result.to_yaml()
    try:
        _write(args.output, text)
    except ValueError as exc:
        return _refuse(exc)
    findings = _validate(text, args.output) if args.validate else []
    return _report(result, args, findings)


def _report_problems(problems, as_json):
    """Why the template did not translate: a line each, or JSON."""
    if as_json:
        _dump({'schema': 'epa-chain/translate/1', 'translated': False,
               'errors': [p.as_dict() for p in problems]})
        return
    for problem in problems:
        print('epa-chain translate: %s' % problem.line(), file=sys.stderr)


def _write(output, text):
    """The translation written; OutputError (one line) if it cannot be."""
    try:
        outputs.write_text(output, text, OUTPUT_OPTION, allow_stdout=True)
    except OSError as exc:
        raise outputs.OutputError('%s %s: cannot write: %s' % (
            OUTPUT_OPTION, output, exc.strerror or exc))


def _report(result, args, findings):
    """What was repaired (and found), on stdout or as JSON; the status."""
    errors_found = [f for f in findings if f.severity == 'error']
    if args.json:
        _dump({'schema': 'epa-chain/translate/1', 'translated': True,
               'output': args.output,
               'repairs': [{'name': r.name, 'loss': r.loss,
                            'changes': r.changes} for r in result.repairs],
               'heat_translator_messages': result.translator_messages,
               'validation': [f.as_dict() for f in findings]})
    else:
        report = sys.stderr if args.output == outputs.STDOUT else sys.stdout
        _print_text(result, args, findings, report)
    if not errors_found:
        return 0
    first = errors_found[0]
    print('epa-chain translate: %s: written, but does not validate: '
          '%s: [%s] %s (%d error%s)' % (
              args.output, first.location(), first.rule,
              ' '.join(first.message.split()), len(errors_found),
              '' if len(errors_found) == 1 else 's'), file=sys.stderr)
    return 1


def _plain_name(output):
    """Refuse a name with a newline or another control character.

    Such a name is a slip (a pasted line end), and a file named so would
    sit unnoticed beside the one meant: /dev/null<newline>, say.
    """
    if not output.isprintable():
        raise outputs.OutputError(
            '%s %s: the name holds a control character (a newline?); give '
            'a plain file name' % (OUTPUT_OPTION, safe_yaml.escape(output)))


def _not_an_input(output, *inputs):
    """Refuse an output that would replace the template or its inputs."""
    if output == outputs.STDOUT or not os.path.exists(output):
        return
    for path in inputs:
        if path and os.path.exists(path) and os.path.samefile(output, path):
            raise outputs.OutputError(
                '%s %s: is %s, which the translation would replace; give '
                'another file' % (OUTPUT_OPTION, output, path))


def _refuse(error):
    print('epa-chain translate: %s' % error, file=sys.stderr)
    return 2


def _validate(text, output):
    from epa_chain.validation import runner

    if output != '-':
        return runner.validate(output).findings
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, 'translated.yaml')
        with open(path, 'w') as f:
            f.write(text)
        return runner.validate(path).findings


def _print_text(result, args, findings, out):
    repaired = [r for r in result.repairs if r.changes]
    print('%s%s -> %s: heat-translator, then %d repairs'
          % (result.source, ' -i %s' % result.inputs if result.inputs else '',
             args.output, len(repaired)), file=out)
    for repair in result.repairs:
        if not repair.changes and not args.verbose:
            continue
        print('  %-26s %s' % (repair.name.replace('repair_', ''),
                              repair.loss if repair.changes else
                              '(nothing lost)'), file=out)
        if args.verbose:
            for change in repair.changes:
                print('      %s' % change, file=out)
    if args.verbose and result.translator_messages:
        print('heat-translator said:', file=out)
        for message in result.translator_messages:
            print('  %s' % message, file=out)
    if args.validate:
        errors_found = [f for f in findings if f.severity == 'error']
        for finding in errors_found + [f for f in findings
                                       if f.severity == 'warning']:
            print('  ' + str(finding).replace('\n', '\n  '), file=out)
        print('validation: %s' % ('OK' if not errors_found else
                                  '%d errors' % len(errors_found)), file=out)


def _dump(document):
    json.dump(document, sys.stderr, indent=2, sort_keys=True)
    sys.stderr.write('\n')
