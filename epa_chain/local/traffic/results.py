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

"""A trial's result from the sender's and the receiver's reports.

Pure: the generator hands in the two reports and the plan, this module
turns them into a TrialResult or a GeneratorError. Errors win over
figures: a sender that fell short of the rate, a receiver whose socket
overflowed (the loss would be the generator's, not the system under
test's) or a worker that failed never produce a result.
"""

import dataclasses

from epa_chain.local.traffic import pacing
from epa_chain.local.traffic import receiver
from epa_chain.measurement import guards
from epa_chain.measurement import trial

SOCKET_ERROR = 'a generator socket failed'
PROCESS_FAILED = 'a generator process failed'
RECEIVER_OVERRUN = 'the generator\'s receiver fell behind'


@dataclasses.dataclass(frozen=True)
class PlannedStream:
    """One stream of one trial: its direction, tag and frame count."""

    direction: str
    tag: int
    planned: int


def check_sender(report):
    if report.get('error'):
        cause = SOCKET_ERROR if 'traceback' not in report else PROCESS_FAILED
        raise trial.GeneratorError(cause, 'sender: %s' % report['error'])


def check_receiver(report):
    if report.get('error'):
        cause = SOCKET_ERROR if 'traceback' not in report else PROCESS_FAILED
        raise trial.GeneratorError(cause, 'receiver: %s' % report['error'])
    dropped = {name: count for name, count
               in report['kernel_dropped'].items() if count}
    if dropped:
        raise trial.GeneratorError(RECEIVER_OVERRUN, '%s: the kernel dropped '
                                   'frames the receiver did not read in time;'
                                   ' lower --max-load'
                                   % ', '.join('%s %d frames' % item
                                               for item in dropped.items()))


def shortfalls(directions, rate_tolerance):
    """Lines describing directions offered below the tolerance."""
    lines = []
    for direction in directions:
        floor = direction.intended_fps * (1.0 - rate_tolerance)
        if direction.offered_fps < floor:
            lines.append(
                '%s: intended %.0f fps, offered %.0f fps (%d frames)'
                % (direction.direction, direction.intended_fps,
                   direction.offered_fps, direction.tx_frames))
    return lines


def latency_record(stream_report, measure_latency):
    if not stream_report['rx']:
        return None
    record = trial.LatencyRecord(
        min_ns=float(stream_report['min_ns']),
        avg_ns=stream_report['sum_ns'] / stream_report['rx'],
        max_ns=float(stream_report['max_ns']),
        out_of_order=stream_report['out_of_order'],
        duplicates=stream_report['duplicates'])
    if measure_latency:
        record.samples = receiver.samples_from(stream_report)
    return record


def assemble(spec, planned, sender_report, receiver_report,
             rate_tolerance):
    """TrialResult of one trial, or GeneratorError."""
    check_sender(sender_report)
    check_receiver(receiver_report)
    notes = []
    results = []
    durations = []
    for index, stream in enumerate(planned):
        tx = sender_report['tx'][index]
        seconds = pacing.sending_seconds(
            tx, sender_report['first'], sender_report['last'],
            sender_report['rate_fps'])
        durations.append(seconds)
        counted = receiver_report['streams'][stream.tag]
        rx = counted['rx']
        results.append(trial.DirectionResult(
            direction=stream.direction, intended_fps=spec.load_fps,
            offered_fps=pacing.offered_fps(tx, seconds),
            achieved_fps=pacing.offered_fps(rx, seconds),
            tx_frames=tx, rx_frames=rx,
            latency=latency_record(counted, spec.measure_latency)))
        notes.extend(_stream_notes(stream, counted, tx, spec))
    short = shortfalls(results, rate_tolerance)
    if short or sender_report.get('cut_off'):
        detail = '; '.join(short) or 'the sender was cut off'
        if sender_report.get('cut_off'):
            detail += ('; sending stopped after %.2f s of %.2f s intended'
                       % (sender_report['last'] - sender_report['first'],
                          spec.duration_s))
        raise trial.GeneratorError(
            guards.RATE_SHORTFALL, '%s (tolerance %.2g %%); this host had '
            'less CPU than when the generator was calibrated: lower --max-load'
            % (detail, rate_tolerance * 100))
    notes.extend(_endpoint_notes(receiver_report))
    if sender_report.get('retries'):
        notes.append('sender: %d sends retried (device queue full)'
                     % sender_report['retries'])
    result = trial.TrialResult(
        spec=spec, directions=results,
        started_at=sender_report['started_at'],
        duration_s=max(durations) if durations else 0.0, notes=notes)
    guards.check_trial(result, rate_tolerance)
    return result


def _stream_notes(stream, counted, tx, spec):
    name = stream.direction
    notes = []
    if counted['wrong_source']:
        notes.append('%s: %d frames arrived from an unexpected source MAC '
                     '(%s)' % (name, counted['wrong_source'], ', '.join(
                         '%s x%d' % item
                         for item in counted['wrong_sources'].items())))
    if counted['beyond_plan']:
        notes.append('%s: %d frames carried a sequence number beyond the '
                     '%d planned (not counted)' % (name,
                                                   counted['beyond_plan'],
                                                   stream.planned))
    if tx < stream.planned:
        notes.append('%s: %d of %d planned frames sent'
                     % (name, tx, stream.planned))
    if spec.measure_latency and counted['stride'] > 1:
        kept = len(counted['sample_seqs']) // 8
        notes.append('%s: latency samples capped at %s: %d kept, blocks of '
                     '%d consecutive frames, one block in every %d; '
                     'min/avg/max cover all %d frames'
                     % (name, counted['sample_cap'], kept, counted['block'],
                        counted['stride'], counted['rx']))
    return notes


def _endpoint_notes(receiver_report):
    notes = []
    for endpoint in receiver_report['endpoints']:
        name = endpoint['endpoint']
        if endpoint['other_destination']:
            notes.append('%s: %d test frames for another MAC arrived (the '
                         'switch flooded them; not counted)'
                         % (name, endpoint['other_destination']))
        if endpoint['unknown_tag']:
            notes.append('%s: %d test frames of another trial or stream '
                         'arrived (not counted)'
                         % (name, endpoint['unknown_tag']))
        if endpoint['foreign']:
            notes.append('%s: %d other IPv4 frames arrived (ignored)'
                         % (name, endpoint['foreign']))
        if endpoint['no_timestamp']:
            notes.append('%s: %d frames had no kernel timestamp (user space '
                         'time used)' % (name, endpoint['no_timestamp']))
    return notes
