# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bounded thread pool of a task acting on many clusters."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor

from ansible_collections.multicluster.fleet.plugins.module_utils.errors import FleetError

# Parallel requests per task (fan_out); matches the per-host connection pool of client.Cluster.
WORKERS = 4


def fan_out(task, clusters):
    """Run ``task(cluster)`` for every cluster on a bounded pool; ``({cluster: result}, {cluster: error})``.

    A :class:`FleetError` of one cluster does not stop the others; its message is collected.
    """
    results, errors = {}, {}
    with ThreadPoolExecutor(max_workers=max(1, min(WORKERS, len(clusters)))) as pool:
        futures = [(cluster, pool.submit(task, cluster)) for cluster in clusters]
        for cluster, future in futures:
            try:
                results[cluster] = future.result()
            except FleetError as exc:
                errors[cluster] = exc.msg
    return results, errors
