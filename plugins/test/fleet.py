# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tests of the collection: ``waiting``, the condition the playbooks and roles retry a waiting task with
(``until: <result> is not multicluster.fleet.waiting``), and ``engine``, whether a value names an engine of the
collection. Their documentation is in ``waiting.yml`` and ``engine.yml`` next to this file."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.multicluster.fleet.plugins.module_utils import engines


def waiting(result):
    """Whether the result of a task says that what the task waits for has not come yet, so that it is run again: a
    module wait that timed out (a failure with ``last_seen``), CSRs csr_accept waits for that have not been requested
    (``waiting``), a join token bootstrap_token (``create=false``) does not find yet (``missing``)."""
    if not hasattr(result, "get"):
        raise AnsibleFilterError("waiting expects a task result, got %s" % type(result).__name__)
    return "waiting" in result or "missing" in result or bool(result.get("failed")) and "last_seen" in result


def engine(value):
    """Whether ``value`` is the name of an engine of the collection (the choices of every module's ``engine``)."""
    return isinstance(value, str) and value in engines.NAMES


class TestModule(object):
    def tests(self):
        return {"waiting": waiting, "engine": engine}
