"""A series' own attributes over its entity's copies: what a process's pod and job do to a GPU's labels."""

from __future__ import annotations

from dcgm_collector.expose.labels import EntityLabels

IDENTITY = [("gpu", "0"), ("UUID", "GPU-1")]
HOLDER = (("container", "main"), ("namespace", "ml"), ("pod", "train-0"))
COPIES = (HOLDER + (("hpc_job", "41"),), HOLDER + (("hpc_job", "42"),))


def test_a_process_with_its_own_pod_and_job_is_one_series_not_one_per_copy():
    entity = EntityLabels.of((1, 0), IDENTITY, {"DRIVER": "550"}, COPIES)
    own = {"pid": "7", "pod": "infer-1", "namespace": "serving", "container": "model", "hpc_job": "42"}
    assert entity.render(attributes=own) == (
        'gpu="0",UUID="GPU-1",DRIVER="550",container="model",hpc_job="42",namespace="serving",pid="7",'
        'pod="infer-1"',)
    assert entity.pairs(attributes=own) == ((*IDENTITY, ("DRIVER", "550"), ("container", "model"), ("hpc_job", "42"),
                                             ("namespace", "serving"), ("pid", "7"), ("pod", "infer-1")),)


def test_empty_attributes_take_the_copies_labels_away_and_without_them_the_copies_stay():
    entity = EntityLabels.of((1, 0), IDENTITY, {}, COPIES)
    blank = {"pid": "8", "process_name": "", "pod": "", "namespace": "", "container": "", "hpc_job": ""}
    assert entity.render(attributes=blank) == ('gpu="0",UUID="GPU-1",pid="8"',)
    assert entity.render(attributes={"pid": "9"}) == (
        'gpu="0",UUID="GPU-1",container="main",hpc_job="41",namespace="ml",pid="9",pod="train-0"',
        'gpu="0",UUID="GPU-1",container="main",hpc_job="42",namespace="ml",pid="9",pod="train-0"')
