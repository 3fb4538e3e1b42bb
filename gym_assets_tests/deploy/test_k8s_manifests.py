"""The plain Kubernetes manifests of deploy/k8s/ against Kubernetes' own schemas (strict)."""

from __future__ import annotations

import kubernetes_validate
import pytest

from gym_assets.defs import executors
from gym_assets_tests.deploy import chart

MANIFESTS = chart.manifests()


def test_the_data_volume_and_the_secret_template_are_shipped():
    assert set(MANIFESTS) == {"data-pvc.yaml", "postgres-secret.example.yaml"}


@pytest.mark.parametrize("name", sorted(MANIFESTS))
def test_each_manifest_is_valid(name):
    kubernetes_validate.validate(MANIFESTS[name], chart.KUBERNETES_VERSION, strict=True)


def test_a_misspelt_field_is_refused():
    broken = {**MANIFESTS["data-pvc.yaml"]}
    broken["spec"] = {**broken["spec"], "accesModes": broken["spec"]["accessModes"]}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, chart.KUBERNETES_VERSION, strict=True)


def test_the_data_volume_is_shared_by_every_node_and_named_as_the_pods_mount_it():
    pvc = MANIFESTS["data-pvc.yaml"]
    assert pvc["kind"] == "PersistentVolumeClaim"
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    assert pvc["metadata"]["name"] == executors.DATA_VOLUME


def test_the_secret_template_holds_no_password():
    secret = MANIFESTS["postgres-secret.example.yaml"]
    assert secret["kind"] == "Secret"
    assert "data" not in secret
    assert set(secret["stringData"].values()) == {"REPLACE-ME"}
