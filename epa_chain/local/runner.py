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

"""Measure an up-and-proven bed as the Tempest plugin does, and report.

The campaign (measurement/campaign.py) is the same code and the same
searches; only the generator differs. Its highest load is capped at what
this host's generator sustains (its calibrate()), since a generator that
cannot offer the rate asked is an error, not a result. lifecycle.py
brings the bed up before and takes it down after; here: the measurement,
the checks after it, the results' testbed section, the tables and the
comparison of chain lengths.
"""

import dataclasses
import os
import time

from epa_chain.local import bed as bed_mod
from epa_chain.local import proof as proof_mod
from epa_chain.measurement import density_curve
from epa_chain.measurement import hop_loss

# calibrate() is a snapshot: on 2 shared cores the sender's rate swings by
# tens of percent within seconds, and a shortfall ends the search.
CALIBRATION_MARGIN = 0.6


def measure(bed, base_plan, progress, measured=None, background=None):
    """Run the campaign on an up-and-proven bed; returns the document.

    `base_plan` is the campaign as the user asked for it; the bed sets
    its chain length and directions, calibration its highest load when
    the user gave none (each a dataclasses.replace, checked again).
    Several chains are measured together (measurement/together.py):
    `measured` (default every chain) share the load, `background`
    ({chain: {frame size label: fps}}) carry a fixed one beside them.
    """
    from epa_chain.measurement import campaign
    from epa_chain.measurement import repeats

    plan = bed.plan
    testbed = {'plan': bed_mod.summary(plan),
               'proof': bed.proof.as_dict(),
               'versions': bed.state.data.get('versions'),
               'timings': dict(bed.timings),
               'vnf_count': plan.vnfs_per_chain,
               'chain_count': plan.chain_count,
               'generator': generator_section(plan)}
    campaign_plan = dataclasses.replace(
        base_plan, chain_length=plan.vnfs_per_chain,
        directions=plan.directions)
    generator = measurement_generator(bed, measured, background)
    if campaign_plan.max_load_fps is None:
        campaign_plan = _capped(generator, campaign_plan, testbed, progress)
    if bed.throttled:
        testbed['throttled'] = dict(bed.throttled)
    started = time.monotonic()
    document = repeats.run(
        lambda: campaign.run(generator, campaign_plan, progress),
        campaign_plan.repeat, progress)
    testbed['timings']['measure_s'] = time.monotonic() - started
    for line in knee_lines(document):
        progress(line)
    checks = end_checks(bed)
    testbed['end_checks'] = checks
    progress('after measuring: %d/%d port MACs still learned, %d frames '
             'flooded since the proof' % (
                 sum(checks['learned'].values()), len(checks['learned']),
                 checks['flooded_since_proof']))
    document['testbed'] = testbed
    return document


def measurement_generator(bed, measured=None, background=None):
    """The bed's generators, each splitting its chain's loss by hop.

    One chain: its generator; several: all of them driven together.
    """
    from epa_chain.measurement import together

    counted = [hop_loss.CountingGenerator(generator, bed.loss_paths(chain),
                                          bed.port_counters)
               for chain, generator in enumerate(bed.generators)]
    if len(counted) == 1:
        return counted[0]
    return together.TogetherGenerator(counted, measured, background)


def measure_noisy(bed, base_plan, fraction, progress):
    """Chain 0 alone, then beside neighbours at `fraction` of their NDR.

    Every chain is searched alone first (the others idle): chain 0's
    figures are the reference, the others' lossless rates set their
    background load. The document is chain 0's run beside them, with
    testbed.noisy_neighbour comparing the two.
    """
    alone = []
    for chain in range(bed.plan.chain_count):
        progress('noisy neighbours: chain %d searched alone, the others '
                 'idle' % chain)
        alone.append(measure(bed, base_plan, progress, measured=(chain,)))
    background = {chain: {label: fps * fraction
                          for label, fps in lossless_rates(doc).items()
                          if fps}
                  for chain, doc in enumerate(alone) if chain}
    progress('noisy neighbours: chain 0 searched while %s' % '; '.join(
        'chain %d carries %s' % (chain, ', '.join(
            '%s fps at %s B' % (format(int(fps), ','), label)
            for label, fps in loads.items()) or 'nothing (no lossless rate)')
        for chain, loads in background.items()))
    document = measure(bed, base_plan, progress, measured=(0,),
                       background=background)
    from epa_chain.measurement import chain_tables

    same_load = same_load_latency(bed, alone[0], background, progress)
    document['testbed']['noisy_neighbour'] = chain_tables.noisy_section(
        alone, document, fraction, background, same_load)
    return document


def same_load_latency(bed, alone, background, progress):
    """Chain 0's latency beside its neighbours at its alone run's load.

    Each run's own latency test is at a fraction of its own throughput:
    beside busy neighbours that load is lower, so the two delays would
    compare different loads. One more latency trial per case, at the
    load of the alone run's, makes a like-for-like pair. {(frame size
    label, flows): latency summary, or the error in words}.
    """
    from epa_chain.measurement import latency as latency_mod
    from epa_chain.measurement import readers
    from epa_chain.measurement import trial

    generator = measurement_generator(bed, (0,), background)
    found = {}
    for case in alone['cases']:
        test = case.get('latency')
        if not test:
            continue
        size = readers.frame_size_of(case)
        spec = trial.TrialSpec(
            trial.TrafficProfile(size, case['flows'],
                                 tuple(case['directions'])),
            test['load_fps'], test['duration_s'], measure_latency=True)
        progress('noisy neighbours: chain 0 latency beside them at %s fps '
                 '(%s B), its load alone' % (
                     format(int(test['load_fps']), ','), size.label))
        key = (size.label, case['flows'])
        try:
            result = generator.run_trial(spec)
        except trial.GeneratorError as error:
            found[key] = 'latency trial failed: %s' % error
            continue
        found[key] = latency_mod.combine(
            latency_mod.summarize([d.latency]) for d in result.directions
            if d.latency is not None)
    return found


def _capped(generator, campaign_plan, testbed, progress):
    """The campaign with its highest load below what the generator sends.

    The sender is slower for big frames: the slowest frame size sets the
    cap, with a margin for the chain's share of the CPUs.
    """
    capacity = {fs.label: generator.calibrate(fs)
                for fs in campaign_plan.frame_sizes}
    margin = getattr(generator, 'calibration_margin', CALIBRATION_MARGIN)
    max_load = min(capacity.values()) * margin
    min_load = campaign_plan.min_load_fps
    if min_load is not None and min_load >= max_load:
        # As with a big frame's line rate: the default floor.
        progress('lowest load %s fps is not below the highest here; the '
                 'default floor applies' % format(int(min_load), ','))
        min_load = None
    testbed['generator_capacity_fps'] = capacity
    progress('generator sustains %s fps per direction here%s; highest load '
             '%s fps' % (', '.join('%s at %s B' % (format(int(fps), ','),
                                                   label)
                                   for label, fps in capacity.items()),
                         ' (the measured chains together)'
                         if len(getattr(generator, 'measured', ())) > 1
                         else '', format(int(max_load), ',')))
    return dataclasses.replace(campaign_plan, max_load_fps=max_load,
                               min_load_fps=min_load)


def knee_lines(document):
    """Per case, who lost the frames at the knee (report.py's table)."""
    from epa_chain.measurement import readers

    lines = []
    for case in document['cases']:
        knee = readers.knee_trial(case)
        if knee is None:
            continue
        lost, owners = readers.lost_by_owner(
            found['loss_by_hop'] for found in knee['directions']
            if found.get('loss_by_hop'))
        lines.append('%s B: at %s fps per direction %s frames lost: %s' % (
            case['frame_size']['label'], readers.count(knee['intended_fps']),
            readers.count(lost), ', '.join(
                '%s %.0f %%' % (owner, 100.0 * frames / lost)
                for owner, frames in sorted(owners.items(),
                                            key=lambda item: -item[1])
                if frames)))
    return lines


def end_checks(bed):
    """After measuring: still learned, nothing flooded since the proof."""
    learned = proof_mod.learned_ports(bed.switch, bed.plan)
    flooded = proof_mod.flooded_since(bed.switch, bed.plan,
                                      bed.flood_baseline)
    return {'learned': learned, 'all_learned': all(learned.values()),
            'flooded_since_proof': flooded}


def generator_section(plan):
    """Which generator measured, why, on which CPUs, at what cost."""
    from epa_chain.local import prox_generator

    generator = plan.generator
    if generator.kind == 'prox':
        return prox_generator.section(generator)
    return {'kind': 'afpacket', 'why': generator.why,
            'cpus': 'any (one sender and one receiver process, scheduled '
                    'by the kernel)',
            'caveats': [
                'Python sender and receiver on AF_PACKET sockets: some '
                '10^5 frames/s per direction, capped by calibration',
                'latency from user-space transmit time to the kernel\'s '
                'receive timestamp (SO_TIMESTAMPNS): includes the veth and '
                'socket path, not only the chain']}


def failures(document):
    """Why a document is not a clean result (empty: it is)."""
    from epa_chain.measurement import campaign

    found = ['%s: %s: %s' % item for item in campaign.errors(document)]
    checks = document.get('testbed', {}).get('end_checks') or {}
    if checks and not checks.get('all_learned'):
        found.append('ports forgotten by OVS during the run: %s' % ', '.join(
            p for p, seen in checks['learned'].items() if not seen))
    if checks.get('flooded_since_proof'):
        found.append('%d frames flooded during the measurement'
                     % checks['flooded_since_proof'])
    noisy = document.get('testbed', {}).get('noisy_neighbour') or {}
    for alone in noisy.get('alone', ()):
        found += ['chain %d alone: %s' % (alone['chain'], problem)
                  for problem in alone.get('errors', ())]
    return found


def lossless_rates(document):
    """{frame size label: throughput of the strictest loss goal}."""
    from epa_chain.measurement import readers

    goals = document['parameters']['loss_goals']
    strictest = min(goals, key=goals.get)
    return {case['frame_size']['label']: (
        readers.goal_of(case, strictest) or {}).get('throughput_fps')
        for case in document['cases']}


def comparison(documents):
    """Lossless rate per chain length as a ratio to the first document."""
    base = lossless_rates(documents[0])
    rows = []
    for document in documents:
        rates = lossless_rates(document)
        for label, fps in rates.items():
            reference = base.get(label)
            rows.append({'vnf_count': document['testbed']['vnf_count'],
                         'frame_size': label, 'lossless_fps': fps,
                         'ratio': (fps / reference if fps and reference
                                   else None)})
    from epa_chain.measurement import results

    return {'schema': results.CHAIN_LENGTHS_SCHEMA_ID,
            'reference_vnf_count': documents[0]['testbed']['vnf_count'],
            'rows': rows}


def render_comparison(table):
    labels = list(dict.fromkeys(r['frame_size'] for r in table['rows']))
    counts = list(dict.fromkeys(r['vnf_count'] for r in table['rows']))
    cell = {(r['vnf_count'], r['frame_size']): r for r in table['rows']}
    header = ['Frame (B)'] + ['%d VNF%s' % (c, '' if c == 1 else 's')
                              for c in counts]
    lines = ['Lossless rate (fps per direction) by chain length, as a ratio '
             'to %d VNFs%s' % (table['reference_vnf_count'],
                               ' (OVS alone)'
                               if table['reference_vnf_count'] == 0 else ''),
             '  '.join('%-18s' % h for h in header)]
    for label in labels:
        row = [label]
        for count in counts:
            item = cell.get((count, label))
            if not item or not item['lossless_fps']:
                row.append('-')
            else:
                row.append('%s (%.2f)' % (format(int(item['lossless_fps']),
                                                 ','), item['ratio'] or 0))
        lines.append('  '.join('%-18s' % c for c in row))
    return '\n'.join(lines) + '\n'


def render_testbed(document):
    testbed = document['testbed']
    timings = testbed['timings']
    chains = testbed.get('chain_count', 1)
    lines = ['Test bed: %s%d VNF(s), %s; up %.1f s, measure %.1f s, down '
             '%s s' % ('%d chains of ' % chains if chains > 1 else '',
                       testbed['vnf_count'],
                       '+'.join(testbed['plan']['directions']),
                       timings.get('up_s', 0), timings.get('measure_s', 0),
                       '%.1f' % timings['down_s'] if 'down_s' in timings
                       else '(kept up)')]
    proof = testbed['proof']
    lines.append('Chain proof: %s; %d hop(s) rewritten as configured; '
                 'flooded during the probe: %d' % (
                     'OK' if proof['ok'] else 'FAILED',
                     sum(1 for h in proof['hops'] if h['ok']),
                     proof['flooded_during_probe']))
    if proof.get('chains'):
        lines.append('Between chains: %d frames crossed (each chain proven '
                     'alone through its own generator)'
                     % proof['crossed_frames'])
    checks = testbed.get('end_checks')
    if checks:
        lines.append('After measuring: %d/%d MACs learned, %d frames '
                     'flooded (unknown unicast) since the proof' % (
                         sum(checks['learned'].values()),
                         len(checks['learned']),
                         checks['flooded_since_proof']))
    return '\n'.join(lines) + '\n'


def finish(documents, json_path, progress, out, plots_dir=None):
    """Print tables, write JSON and plots; exit status 0 clean, 1 not."""
    from epa_chain.measurement import report
    from epa_chain.measurement import results

    problems = []
    for document in documents:
        out.write(report.render_tables(document))
        out.write('\n' + render_testbed(document) + '\n')
        problems += failures(document)
    payload = documents[0]
    if _compares_chain_counts(documents):
        table = density_curve.curve(
            [(d['testbed']['chain_count'], d) for d in documents])
        out.write(density_curve.render(table))
        payload = table
    elif len(documents) > 1:
        table = comparison(documents)
        out.write(render_comparison(table))
        payload = dict(table, runs=documents)
    if json_path:
        results.write_json(payload, json_path)
        progress('results written to %s' % json_path)
    if plots_dir:
        for path in _plots(documents, plots_dir):
            progress('plot: %s' % path)
        if _compares_chain_counts(documents):
            progress('plot: %s' % density_curve.plot(payload, plots_dir,
                                                     '--plots'))
    for problem in problems:
        progress('FAILED: ' + problem)
    out.flush()
    return 1 if problems else 0


def _compares_chain_counts(documents):
    return len({d['testbed'].get('chain_count', 1)
                for d in documents}) > 1


def _plots(documents, plots_dir):
    """Each document's plots; several runs a folder each."""
    from epa_chain.measurement import plots

    if len(documents) == 1:
        return plots.render(documents[0], plots_dir, '--plots')
    paths = []
    for document in documents:
        folder = ('chains-%d' % document['testbed']['chain_count']
                  if _compares_chain_counts(documents) else
                  'vnfs-%d' % document['parameters']['chain_length'])
        paths += plots.render(document, os.path.join(plots_dir, folder),
                              '--plots')
    return paths
