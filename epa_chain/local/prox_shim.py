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

"""Let PROX run two gen tasks on one core: unique DPDK hash table names.

PROX names each gen task's flow table after its core only (handle_gen.c:
"A%03d_hash_gen_table"), so a second gen task on the same core fails in
rte_hash_create() (the name exists) and PROX aborts. A bidirectional
generator therefore needs a core per direction plus the master: 3 CPUs,
as DPDK's lcore N is CPU N. On a 2-CPU host that leaves no way to run
both directions in one PROX, and two PROX processes (one per direction)
would time-share one CPU between two busy-polling gen tasks, which loses
pacing (a gen task forgets the time it was off the CPU).

This preload library wraps rte_hash_create() (librte_hash, a shared
library of the distribution's DPDK) and appends a counter to each name:
nothing else changes. It is built with the host's C compiler against the
distribution's DPDK headers, into the bed's directory, when the bed needs
it; a PROX built with the names fixed upstream does not need it.
"""

import os
import shutil
import subprocess

SOURCE = r'''
/* epa-chain: unique rte_hash names, see epa_chain/local/prox_shim.py */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <rte_hash.h>

struct rte_hash *rte_hash_create(const struct rte_hash_parameters *params)
{
    static struct rte_hash *(*next)(const struct rte_hash_parameters *);
    static unsigned int count;
    struct rte_hash_parameters unique = *params;
    char name[RTE_HASH_NAMESIZE];

    if (next == NULL)
        next = (struct rte_hash *(*)(const struct rte_hash_parameters *))
            dlsym(RTLD_NEXT, "rte_hash_create");
    if (next == NULL || params == NULL || params->name == NULL)
        return NULL;
    snprintf(name, sizeof(name), "%.20s%u", params->name, count++);
    unique.name = name;
    return next(&unique);
}
'''
NAME = 'epa-chain-prox-hash-names.so'
INCLUDE_DIRS = ('/usr/include/dpdk', '/usr/include/x86_64-linux-gnu/dpdk')
# One small C file: a compiler that takes longer is stuck.
COMPILE_TIMEOUT_S = 120


class ShimError(RuntimeError):
    """The preload library cannot be built here: why and how to fix it."""


def build(directory, compiler=None):
    """Build the library into `directory`; its path."""
    compiler = compiler or shutil.which('cc') or shutil.which('gcc')
    if not compiler:
        raise ShimError('two PROX gen tasks on one core need a preload '
                        'library built with a C compiler: apt-get install '
                        'gcc, or give the generator more CPUs')
    includes = [d for d in INCLUDE_DIRS if os.path.isdir(d)]
    if not any(os.path.isfile(os.path.join(d, 'rte_hash.h'))
               for d in includes):
        raise ShimError('no rte_hash.h in %s: apt-get install libdpdk-dev '
                        '(the DPDK PROX is built against)'
                        % ', '.join(INCLUDE_DIRS))
    os.makedirs(directory, exist_ok=True)
    source = os.path.join(directory, 'prox-hash-names.c')
    with open(source, 'w') as stream:
        stream.write(SOURCE)
    target = os.path.join(directory, NAME)
    argv = [compiler, '-shared', '-fPIC', '-O2', '-o', target, source,
            '-ldl'] + ['-I%s' % d for d in includes]
    try:
        done = subprocess.run(argv, capture_output=True, text=True,
                              timeout=COMPILE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise ShimError('%s did not finish in %d s' % (' '.join(argv),
                                                       COMPILE_TIMEOUT_S))
    if done.returncode:
        raise ShimError('%s failed (%d): %s' % (
            ' '.join(argv), done.returncode, done.stderr.strip()[-500:]))
    return target
