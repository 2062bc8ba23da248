# -*- coding: utf-8 -*-
# Copyright: multicluster.fleet contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the fleet from the hub, whichever engine runs it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.multicluster.fleet.plugins.module_utils import karmada, ocm, resources

ENGINES = ("karmada", "ocm")
_MEMBER_KIND = {"karmada": (karmada.CLUSTER, karmada.summarize_cluster),
                "ocm": (ocm.MANAGED_CLUSTER, ocm.summarize_managed_cluster)}


def member_kind(engine):
    """The hub kind that stands for a member cluster under ``engine``."""
    return _MEMBER_KIND[engine][0]


def summarize(engine, obj):
    """Engine-neutral summary of a member cluster object, with the object itself under ``object``."""
    summary = _MEMBER_KIND[engine][1](obj)
    summary["object"] = resources.presentable(obj)
    return summary


def member_clusters(hub, engine, name=None, label_selectors=None):
    """Summaries of the member clusters registered on ``hub``, sorted by name.

    ``name`` reads one cluster (an empty list when it does not exist); ``label_selectors`` are
    Kubernetes label selector expressions, all of which must match.
    """
    selector = ",".join(label_selectors or []) or None
    objs = resources.list_objects(hub, member_kind(engine), label_selector=selector,
                                  field_selector="metadata.name=%s" % name if name else None)
    return sorted((summarize(engine, o) for o in objs), key=lambda s: s["name"])
