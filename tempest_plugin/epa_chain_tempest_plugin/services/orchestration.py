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

"""The Heat API as a tempest.lib RestClient.

Tempest has no orchestration client any more, so this is the small one
the benchmark needs: Tempest's auth provider picks the endpoint
(catalog type, endpoint type, region) and renews the token, and every
request is logged to tempest.log as Tempest's own clients' are.
HeatFacade gives it the shape of python-heatclient's v1 Client that
epa_chain.cloud.stack.StackService drives.
"""

import json
import types
from urllib import parse

from heatclient import exc as heat_exc
from tempest.lib.common import rest_client
from tempest.lib import exceptions as lib_exc


class OrchestrationClient(rest_client.RestClient):
    """Stacks and their resources (Heat API v1)."""

    def create_stack(self, **body):
        resp, body = self.post('stacks', json.dumps(body))
        self.expected_success(201, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def show_stack(self, stack_identifier, **params):
        # Heat answers /stacks/<id> with a redirect to /stacks/<name>/<id>,
        # which the client follows.
        resp, body = self.get(self._url('stacks/%s' % stack_identifier,
                                        params))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def delete_stack(self, stack_identifier):
        resp, body = self.delete('stacks/%s' % stack_identifier)
        self.expected_success(204, resp.status)
        return rest_client.ResponseBody(resp, body)

    def list_stacks(self, **params):
        resp, body = self.get(self._url('stacks', params))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    def list_resources(self, stack_identifier, **params):
        resp, body = self.get(self._url(
            'stacks/%s/resources' % stack_identifier, params))
        self.expected_success(200, resp.status)
        return rest_client.ResponseBody(resp, json.loads(body))

    @staticmethod
    def _url(path, params):
        params = {k: v for k, v in params.items() if v is not None}
        return '%s?%s' % (path, parse.urlencode(params)) if params else path


def _heat_error(exc):
    """tempest.lib's exception as the heatclient one StackService knows."""
    if isinstance(exc, lib_exc.NotFound):
        return heat_exc.HTTPNotFound(str(exc))
    if isinstance(exc, lib_exc.Forbidden):
        # e.g. stacks:global_index, which Heat's policy denies by default.
        return heat_exc.HTTPForbidden(str(exc))
    return heat_exc.HTTPException(str(exc))


def _call(method, *args, **kwargs):
    try:
        return method(*args, **kwargs)
    except lib_exc.RestClientException as exc:
        raise _heat_error(exc) from exc


class _Stacks:
    def __init__(self, client):
        self.client = client

    def create(self, **fields):
        return dict(_call(self.client.create_stack, **fields))

    def get(self, stack_id, resolve_outputs=True):
        params = {} if resolve_outputs else {'resolve_outputs': 'False'}
        body = _call(self.client.show_stack, stack_id, **params)
        return types.SimpleNamespace(**body['stack'])

    def delete(self, stack_id):
        _call(self.client.delete_stack, stack_id)

    def list(self, **params):
        body = _call(self.client.list_stacks, **params)
        return [types.SimpleNamespace(**s) for s in body['stacks']]


class _Resources:
    def __init__(self, client):
        self.client = client

    def list(self, stack_id, nested_depth=None):
        body = _call(self.client.list_resources, stack_id,
                     nested_depth=nested_depth)
        return [types.SimpleNamespace(**r) for r in body['resources']]


class HeatFacade:
    """OrchestrationClient with heatclient v1's stacks/resources shape."""

    def __init__(self, client):
        self.client = client
        self.stacks = _Stacks(client)
        self.resources = _Resources(client)
