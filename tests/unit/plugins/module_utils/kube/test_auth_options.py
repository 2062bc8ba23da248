from ansible_collections.multicluster.fleet.plugins.module_utils.kube import auth_options
from ansible_collections.multicluster.fleet.plugins.module_utils.module import auth_argument_spec


def test_the_options_are_kubernetes_cores_and_each_has_its_environment_variables():
    assert auth_options.AUTH_OPTIONS[:3] == auth_options.NAMING_OPTIONS == ("kubeconfig", "context", "host")
    assert len(set(auth_options.AUTH_OPTIONS)) == len(auth_options.AUTH_OPTIONS)
    for option, variables in auth_options.ENVIRONMENT:
        assert variables and variables[0] == "K8S_AUTH_" + option.upper()
    assert dict(auth_options.ENVIRONMENT)["validate_certs"] == ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL")


def test_every_module_offers_exactly_these_options():
    spec = auth_argument_spec()
    assert list(spec) == list(auth_options.AUTH_OPTIONS)
    aliases = dict((option, spec[option].get("aliases", [])) for option in spec)
    for option, variables in auth_options.ENVIRONMENT:  # an alias has its own variable: verify_ssl, K8S_AUTH_VERIFY_SSL
        assert ["K8S_AUTH_" + alias.upper() for alias in aliases[option]] == list(variables[1:])
