from ansible_collections.multicluster.fleet.plugins.module_utils.karmada import hub_objects


def names(objects):
    return sorted(obj["metadata"]["name"] for _kind, obj in objects)


def test_automatic_approval_is_wanted_or_removed_as_asked():
    wanted, unwanted = hub_objects.registration_objects(csr_auto_approval=True)
    manual_wanted, manual_unwanted = hub_objects.registration_objects(csr_auto_approval=False)
    assert unwanted == [] and names(wanted) == sorted(names(manual_wanted) + names(manual_unwanted))
    assert "system:karmada:agent-autoapprove-bootstrap" in names(manual_unwanted)
    assert "system:karmada:agent-autoapprove-bootstrap" not in names(manual_wanted)


def test_the_bootstrap_group_may_request_csrs_as_karmadactl_init_allows():
    wanted, _unwanted = hub_objects.registration_objects(csr_auto_approval=False)
    binding = next(obj for _kind, obj in wanted if obj["metadata"]["name"] == "system:karmada:agent-bootstrap")
    assert binding["roleRef"]["name"] == hub_objects.NODE_BOOTSTRAPPER
    assert binding["subjects"] == [{"kind": "Group", "name": "system:bootstrappers:karmada:default-cluster-token",
                                    "apiGroup": "rbac.authorization.k8s.io"}]
