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

"""One benchmark scenario from start to end, free of Tempest.

resolve the stack offline (Heat's refusal stops here, nothing created)
-> preflight (a cloud that cannot host it stops here, nothing created)
-> create it -> wait for CREATE_COMPLETE -> wait until every node of the
resolved stack reports ready (keeping where each guest's boot went) ->
start the parked VNFs' tasks -> check every direction forwards -> for
each frame size x flow count, run the configured campaign (search, then
the latency test at a fraction of the NDR) through the in-stack PROX
generator -> write the results (a case that ended in a generator error
fails the scenario once everything is written). Deleting the stack is
registered with `add_cleanup` as soon as Heat has accepted it, so it
happens even when a later step fails. The steps are the workflow's
(workflow.py), which `epa-chain prove` and `measure` run too; this
class chooses them for the scenario and keeps its budget and files.
"""

import contextlib
import dataclasses
import functools
import itertools
import logging
import os
import time
import typing

from epa_chain.cloud import budget as budget_mod
from epa_chain.cloud import hop_check
from epa_chain.cloud import options as opts
from epa_chain.cloud import readiness
from epa_chain.cloud import results
from epa_chain.cloud import stack as stack_mod
from epa_chain.cloud import vnf_tasks
from epa_chain.cloud import workflow
from epa_chain.measurement import campaign
from epa_chain.measurement import report
from epa_chain.measurement import together

LOG = logging.getLogger(__name__)


class BenchmarkError(workflow.StepError):
    """The stack is up but cannot be measured (e.g. no generator)."""


# The workflow's step, here for the readers of its old place.
prox_generator = workflow.prox_generator


# Stands for the partial-results directory while plans are only checked
# (a soak needs one); nothing is written there.
PLAN_CHECK_DIR = '(checked before the run)'


@dataclasses.dataclass
class _Cases:
    """What the campaigns of a run left: files, failures, cases not run."""

    written: typing.List[str] = dataclasses.field(default_factory=list)
    #: (label, cause, detail) of the cases that ended in an error
    failed: list = dataclasses.field(default_factory=list)
    not_run: typing.List[str] = dataclasses.field(default_factory=list)
    #: the verdict tables of the cases that missed a KPI
    missed: list = dataclasses.field(default_factory=list)


class ChainBenchmark:
    """Runs the flow against a cloud reached through small adapters.

    stacks: a stack.StackService; compute: show_server(id) (the server as
    the compute API shows it), server_topology(id) (at compute API 2.78,
    with its flavor's extra specs) and image_properties(image id) (its
    hw_* properties): epa_audit's input, server_status(id),
    console_output(id) and hard_reboot(id): the readiness wait's (the
    Tempest plugin's services/clients.py TempestCompute);
    generator_factory(endpoint) ->
    an epa_chain Generator (default: PROX, with the options' rate
    tolerance); answers: preflight's questions of the cloud (a
    cloud_answers.CloudView, or the plugin's TempestCloudAnswers), asked
    before the stack is created; None skips preflight. switch: this
    host's Open vSwitch (the ovs_hops module) to split each lossy trial
    by hop where it holds the chain's ports; None does not read it.
    """

    def __init__(self, options, stacks, compute, add_cleanup,
                 generator_factory=None, ready_interval=10.0,
                 clock=time.monotonic, sleep=time.sleep, budget=None,
                 answers=None, switch=None, tasks_factory=vnf_tasks.Tasks):
        self.options = options
        # vnf_tasks.Tasks of the stack's parked VNFs (a fake in tests).
        self.tasks_factory = tasks_factory
        self.answers = answers
        # This host's Open vSwitch (ovs_hops: snapshot, live_counters)
        # when the chain may run here: every lossy trial is then split
        # hop by hop. None: not read.
        self.switch = switch
        # The test's timeout (budget.Budget); unlimited without one.
        self.budget = budget or budget_mod.Budget(None, clock=clock)
        self.stacks = stacks
        self.compute = compute
        self.add_cleanup = add_cleanup
        self.generator_factory = generator_factory or functools.partial(
            prox_generator,
            rate_tolerance=options.generator_rate_tolerance)
        self.ready_interval = ready_interval
        self.clock = clock
        self.sleep = sleep

    def deploy(self, stack_name, chain_length, direction, resolved):
        """Create the stack and wait for it.

        Returns its outputs and what the results keep of the deployed
        chain (`cloud`: where Nova put its servers, where each guest's boot
        went, the EPA audit). `resolved` is the stack as stack.resolve saw
        it: its topology names the nodes to wait for.
        """
        stack_id = self.create(stack_name, chain_length, direction,
                               resolved)
        outputs = self.stacks.outputs(stack_id)
        shown = {server_id: self.compute.show_server(server_id)
                 for server_id in self.stacks.server_ids(stack_id)}
        nodes = readiness.expected_nodes(resolved.topology, {
            server_id: server['name'] for server_id, server in shown.items()})
        where = workflow.placed(shown, resolved.parameters, LOG.info)
        ready = workflow.wait_ready(
            self.compute, nodes, shown, self.options.vnf_ready_timeout,
            LOG.info, interval=self.ready_interval, clock=self.clock,
            sleep=self.sleep)
        cloud = {'placement': where, 'boot': ready.boot,
                 'epa_audit': self.audit(stack_name, sorted(shown))}
        return outputs, cloud

    def create(self, stack_name, chain_length, direction, resolved):
        """Preflight, then create the stack; its ID, its deletion registered.

        Deleting it is registered with `add_cleanup` as soon as Heat has
        accepted it, and CREATE_COMPLETE waited for.
        """
        args = stack_mod.build_create_args(stack_name, self.options,
                                           chain_length, direction)
        # A stack an earlier run could not delete still holds its VLANs.
        self.stacks.release_segments(
            stack_mod.resolved_segments(resolved, chain_length),
            self.options.stack_delete_timeout)
        self.preflight(resolved)
        stack_id = self.stacks.create(args)
        self.add_cleanup(functools.partial(
            self.stacks.delete, stack_id, self.options.stack_delete_timeout))
        self.stacks.wait_for_create(stack_id,
                                    self.options.stack_create_timeout)
        return stack_id

    def audit(self, stack_name, server_ids):
        """The EPA audit of the booted chain (workflow.audit)."""
        return workflow.audit(self.compute, stack_name, server_ids, log=LOG)

    def preflight(self, resolved):
        """BenchmarkError, nothing created, when the cloud cannot host it.

        The findings are logged either way: what was checked, and what
        no API could show.
        """
        try:
            workflow.preflight(resolved, self.answers, LOG.info)
        except workflow.StepError as error:
            raise BenchmarkError(str(error)) from None

    def measure(self, outputs, chain_length, direction, cloud=None):
        """Hop check, then every campaign; return the files written.

        `cloud` (deploy's record of the chain: placement, boot, EPA
        audit) goes into every result, with the hop check and which VNF
        tasks ran when: the parked VNFs' tasks run from the hop check to
        the last case, and are parked again however it ends. A stack of
        several chains: each chain's generator and hop check, then the
        chains measured together (1 .. N of them with density_sweep).
        """
        chains = self.chains(outputs)
        run_dir = results.run_directory(self.options.results_dir,
                                        chain_length, direction)
        tasks = self.tasks_factory(vnf_tasks.of_chains(
            vnf_tasks.endpoints(chain) for chain in chains))
        with contextlib.ExitStack() as held:
            generators = [held.enter_context(self.generator_factory(
                chain['generator_control_endpoint'])) for chain in chains]
            held.enter_context(vnf_tasks.running(tasks))
            cloud = dict(cloud or {}, vnf_tasks=vnf_tasks.record(tasks),
                         hop_check=self.hop_check(generators, chains,
                                                  direction))
            members = [self.loss_split(generator, chain, direction) or
                       generator
                       for generator, chain in zip(generators, chains)]
            done = self.sweep(members, cloud, (chain_length, direction),
                              run_dir)
        LOG.info('Results in %s', run_dir)
        self.raise_unfinished(done, run_dir)
        return done.written

    def chains(self, outputs):
        """Each chain's outputs, every one with its in-stack generator.

        chain.yaml lists them in `chains`; a stack without it is one.
        """
        chains = outputs.get('chains') or [outputs]
        if len(chains) != self.options.chain_count:
            raise BenchmarkError(
                'the stack has %d chain(s), [%s] chain_count is %d'
                % (len(chains), opts.GROUP, self.options.chain_count))
        for index, chain in enumerate(chains):
            endpoint = chain.get('generator_control_endpoint')
            if not endpoint or not endpoint.get('host'):
                raise BenchmarkError(
                    'the stack has no generator_control_endpoint%s (%r): '
                    'the scenarios need the in-stack generator' % (
                        ' in chain %d' % index if len(chains) > 1 else '',
                        endpoint))
        return chains

    def hop_check(self, generators, chains, direction):
        """Every chain's hop check, as the results' cloud.hop_check.

        Chain 0's at the top (one chain's record as ever), each chain's
        in `chains` when there are several.
        """
        settings = workflow.HopSettings(
            load_fraction=self.options.hop_check_load_fraction,
            max_loss_ratio=self.options.hop_check_max_loss_ratio,
            attempts=self.options.hop_check_attempts)
        records = [settings.record(list(workflow.hop_checks(
            generator, direction, chain, settings, sleep=self.sleep)))
            for generator, chain in zip(generators, chains)]
        if len(records) == 1:
            return records[0]
        return dict(records[0], chains=[dict(record, chain=index)
                                        for index, record in
                                        enumerate(records)])

    def sweep(self, members, cloud, chain, run_dir):
        """Every measured chain count's cases; one _Cases for them all.

        One count (chain_count): the run directory as for one chain.
        Several (density_sweep): a chains-K directory each, then the
        density curve over them in the run directory.
        """
        counts = self.options.measured_chain_counts()
        done = _Cases()
        runs = []
        for count in counts:
            generator = (members[0] if len(members) == 1 else
                         together.TogetherGenerator(
                             members, measured=tuple(range(count))))
            directory = run_dir
            if len(counts) > 1:
                LOG.info('Measuring %d of %d chains together', count,
                         len(members))
                directory = os.path.join(run_dir, 'chains-%d' % count)
                os.makedirs(directory, exist_ok=True)
            runs += [(count, document) for document in self.cases(
                generator, cloud, chain, directory, done)]
        if len(counts) > 1 and runs:
            done.written.extend(results.write_density(run_dir, runs))
        return done

    def cases(self, generator, cloud, chain, run_dir, done):
        """Every frame size x flow count the time allows, into `done`.

        `chain` is (chain_length, direction). Returns the documents.
        """
        documents = []
        campaign_options = self.options.campaign
        for frame_size, flows in itertools.product(
                campaign_options.frame_sizes, campaign_options.flow_counts):
            stem = results.file_stem(frame_size, flows)
            if done.not_run or not self.budget.allows(
                    budget_mod.case_minimum_s(self.options),
                    self.options.stack_delete_timeout):
                # Keep the deletion's time: the test timeout would
                # otherwise interrupt it.
                done.not_run.append(stem)
                continue
            LOG.info('Measuring %s', stem)
            plan = self.options.case_campaign(
                frame_size, flows, chain[1], chain[0],
                results.partial_directory(run_dir, stem))
            document, missed = workflow.measure_case(
                generator, plan, cloud, self.options.kpi_file, LOG.info)
            if missed is not None:
                done.missed.append(missed)
            done.written.extend(results.write(run_dir, stem, document))
            done.failed.extend(campaign.errors(document))
            documents.append(document)
        return documents

    def raise_unfinished(self, done, run_dir):
        """BenchmarkError for cases not run, failed, or short of a KPI."""
        if done.not_run:
            raise BenchmarkError(
                'the test timeout (%d s%s) left no time for %d case(s): %s '
                '(results of the others in %s); raise OS_TEST_TIMEOUT or '
                '[epa_chain] timeout_scaling_factor, or measure less' % (
                    self.budget.total_s, self.budget.description,
                    len(done.not_run), ', '.join(done.not_run), run_dir))
        if done.failed:
            # Measured cases are written; a case that ended in a generator
            # error (VNF stopped forwarding, rate not reached) has no figure.
            raise BenchmarkError('%d case(s) failed, results in %s: %s' % (
                len(done.failed), run_dir, '; '.join(
                    '%s: %s%s' % (label, cause, ' (%s)' % detail
                                  if detail else '')
                    for label, cause, detail in done.failed)))
        if done.missed:
            raise BenchmarkError('[epa_chain] kpi_file: a KPI not met, '
                                 'results in %s:\n%s' % (run_dir, '\n'.join(
                                     report.render_table(t)
                                     for t in done.missed)))

    def loss_split(self, generator, outputs, direction):
        """`generator` splitting each lossy trial by hop, or None.

        Only where this host's switch holds every port of the chain (an
        all-in-one cloud, as the single-host one); elsewhere said once.
        """
        if self.switch is None:
            return None
        try:
            interfaces = self.switch.snapshot()
            paths = self.switch.loss_paths([
                {'direction': name, 'hop_counts': self.switch.counted_hops(
                    outputs.get(hop_check.CHAIN_OUTPUTS[name]) or [],
                    interfaces)}
                for name in direction])
        except self.switch.OVSError as error:
            LOG.info('Loss not split by hop: %s', error)
            return None
        return workflow.split_by_hop(generator, paths,
                                     self.switch.live_counters)

    def check_plans(self, chain_length, direction):
        """Build every campaign once before deploying anything.

        A value the measurement engine refuses then fails in a second,
        not after the stack, the readiness wait and the first searches.
        """
        for frame_size in self.options.campaign.frame_sizes:
            for flows in self.options.campaign.flow_counts:
                self.options.case_campaign(frame_size, flows, direction,
                                           chain_length, PLAN_CHECK_DIR)

    def run(self, stack_name, chain_length, direction):
        """One scenario, `direction` a chain_directions choice."""
        self.check_plans(chain_length, direction)
        self.budget.check(self.options, direction)
        resolved = stack_mod.resolve(stack_name, self.options, chain_length,
                                     direction)
        outputs, cloud = self.deploy(stack_name, chain_length, direction,
                                     resolved)
        return self.measure(outputs, chain_length, direction, cloud)
