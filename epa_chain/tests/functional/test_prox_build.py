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

"""A real PROX build from EPA_CHAIN_PROX_SOURCE, into a temporary cache.

The source package download (the driver-SDK headers through a private apt
configuration), meson and ninja all run for real: about 40 s on 2 CPUs.
Then the binary must run (PROX prints its usage for an unknown option and
exits 1), the manifest must describe the build, and a second call must be
a cache hit. Skipped without EPA_CHAIN_PROX_SOURCE (CI passes
../shared/third_party/samplevnf-*.tar.gz).
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import testtools
import testtools.content

from epa_chain.prox import build
from epa_chain.tests import prox_binary


class TestProxBuild(testtools.TestCase):

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.source = os.environ.get(build.SOURCE_VARIABLE)
        if not cls.source:
            raise unittest.SkipTest('real PROX build: ' +
                                    prox_binary.SKIP_REASON)
        cls.cache = tempfile.mkdtemp(prefix='epa-chain-prox-cache-')
        cls.messages = []
        started = time.monotonic()
        try:
            cls.binary = build.build(cls.source, cls.cache,
                                     progress=cls._progress)
        except BaseException:
            shutil.rmtree(cls.cache, ignore_errors=True)
            raise
        cls.seconds = time.monotonic() - started

    @classmethod
    def _progress(cls, message):
        cls.messages.append(message)
        sys.stderr.write('[prox build] %s\n' % message)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.cache, ignore_errors=True)
        super().tearDownClass()

    def test_binary_runs_and_prints_its_usage(self):
        self.assertTrue(self.binary.startswith(self.cache + os.sep))
        result = subprocess.run([self.binary, '-h'], capture_output=True,
                                text=True, timeout=30)
        output = result.stdout + result.stderr
        self.assertEqual(1, result.returncode, output)
        self.assertIn('Usage: %s [-f CONFIG_FILE]' % self.binary, output)

    def test_binary_links_the_distribution_dpdk(self):
        ldd = subprocess.run(['ldd', self.binary], capture_output=True,
                             text=True, check=True).stdout
        self.assertIn('librte_ethdev.so', ldd)
        self.assertNotIn('not found', ldd)

    def test_manifest_describes_the_build(self):
        with open(os.path.join(os.path.dirname(self.binary),
                               build.MANIFEST)) as stream:
            manifest = json.load(stream)
        identity = build.identify(self.source)
        dpdk, debian = build.dpdk_versions()
        self.assertEqual(identity.digest, manifest['source_digest'])
        self.assertEqual(identity.commit, manifest['samplevnf_commit'])
        self.assertEqual(dpdk, manifest['dpdk_version'])
        self.assertEqual(debian, manifest['dpdk_package_version'])
        self.assertRegex(manifest['prox_version'], r'^\d\d\.\d\d')
        # the source edit applied (test_prox_live runs its result)
        self.assertEqual(['unique gen flow table name per task'],
                         manifest['source_patches'])
        self.assertEqual(build.patches_digest(),
                         manifest['source_patches_digest'])
        self.assertIn('-p%s-' % build.patches_digest(), self.binary)
        self.addDetail('build', testtools.content.text_content(
            'built in %.1f s: %s' % (self.seconds, json.dumps(manifest))))

    def test_second_call_is_a_cache_hit(self):
        started = time.monotonic()
        again = build.build(self.source, self.cache)
        self.assertLess(time.monotonic() - started, 10)
        self.assertEqual(self.binary, again)
        self.assertEqual(self.binary, build.cached(self.source, self.cache))
        # Only the entry, the headers and the lock: no staging left.
        self.assertEqual(
            ['dpdk-sdk-headers', os.path.basename(os.path.dirname(again))],
            sorted(e for e in os.listdir(self.cache)
                   if not e.startswith('.')))

    def test_command_prints_the_cached_path(self):
        result = subprocess.run(
            [sys.executable, '-m', 'epa_chain.prox.build', '--source',
             self.source, '--cache-dir', self.cache],
            capture_output=True, text=True, timeout=60)
        self.assertEqual(0, result.returncode, result.stderr)
        self.assertEqual(self.binary + '\n', result.stdout)
        self.assertIn('cached: ', result.stderr)
