"""Offline checks of Kubernetes objects, shared by the deploy tests and the deploy stand-ins.

Built-in kinds are checked against Kubernetes' own OpenAPI schemas
(kubernetes-validate, strict, so a misspelt field fails), at the oldest and
newest minor it carries.  The ServiceMonitor is checked against a schema
written from the prometheus-operator CRD (monitoring.coreos.com/v1, 0.93),
which kubernetes-validate does not carry; the PrometheusRule's shape is
checked here and its rules by ``promtool check rules`` in the tests.

Helm charts are rendered with helm-python-sdk (Helm v4's Go SDK as a native
library): there is no helm binary in Debian or on PyPI.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

# the oldest and newest Kubernetes minors kubernetes-validate 1.37 carries
KUBERNETES_VERSIONS = ("1.25", "1.37")

# The parts of the ServiceMonitor v1 CRD (prometheus-operator 0.93) that the
# manifests can use, with the CRD's types, enums and duration pattern; unknown
# keys are refused, as the API server's structural schema would prune them.
_DURATION = {"type": "string",
             "pattern": r"^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_STRINGS = {"type": "array", "items": {"type": "string"}}
_LABEL_SELECTOR = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
        "matchExpressions": {"type": "array", "items": {
            "type": "object", "required": ["key", "operator"],
            "properties": {"key": {"type": "string"}, "operator": {"type": "string"}, "values": _STRINGS}}},
    },
}
_ACTIONS = ["replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep", "lowercase", "uppercase",
            "keepequal", "dropequal", "Replace", "Keep", "Drop", "HashMod", "LabelMap", "LabelDrop", "LabelKeep",
            "Lowercase", "Uppercase", "KeepEqual", "DropEqual"]
_RELABELING = {
    "type": "object", "additionalProperties": False,
    "properties": {
        "sourceLabels": {"type": "array", "items": {"type": "string", "pattern": "^[a-zA-Z_][a-zA-Z0-9_]*$"}},
        "separator": {"type": "string"}, "targetLabel": {"type": "string"}, "regex": {"type": "string"},
        "modulus": {"type": "integer"}, "replacement": {"type": "string"}, "action": {"enum": _ACTIONS},
    },
}
_INT_OR_STRING = {"anyOf": [{"type": "integer"}, {"type": "string"}]}
_METADATA = {"type": "object", "required": ["name"],
             "properties": {"name": {"type": "string"}, "namespace": {"type": "string"},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "annotations": {"type": "object", "additionalProperties": {"type": "string"}}}}
SERVICE_MONITOR_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": _METADATA,
        "spec": {
            "type": "object", "required": ["selector", "endpoints"], "additionalProperties": False,
            "properties": {
                "selector": _LABEL_SELECTOR,
                "namespaceSelector": {"type": "object", "additionalProperties": False,
                                      "properties": {"any": {"type": "boolean"}, "matchNames": _STRINGS}},
                "jobLabel": {"type": "string"}, "targetLabels": _STRINGS, "podTargetLabels": _STRINGS,
                "sampleLimit": {"type": "integer"}, "targetLimit": {"type": "integer"},
                "labelLimit": {"type": "integer"}, "labelNameLengthLimit": {"type": "integer"},
                "labelValueLengthLimit": {"type": "integer"}, "keepDroppedTargets": {"type": "integer"},
                "bodySizeLimit": {"type": "string"},
                "endpoints": {"type": "array", "minItems": 1, "items": {
                    "type": "object", "additionalProperties": False,
                    "properties": {
                        "port": {"type": "string"}, "targetPort": _INT_OR_STRING, "path": {"type": "string"},
                        "scheme": {"enum": ["http", "https", "HTTP", "HTTPS"]},
                        "interval": _DURATION, "scrapeTimeout": _DURATION,
                        "honorLabels": {"type": "boolean"}, "honorTimestamps": {"type": "boolean"},
                        "relabelings": {"type": "array", "items": _RELABELING},
                        "metricRelabelings": {"type": "array", "items": _RELABELING},
                        "tlsConfig": {"type": "object"}, "basicAuth": {"type": "object"},
                        "authorization": {"type": "object"}, "bearerTokenSecret": {"type": "object"},
                        "oauth2": {"type": "object"}, "params": {"type": "object"},
                        "followRedirects": {"type": "boolean"}, "enableHttp2": {"type": "boolean"},
                        "filterRunning": {"type": "boolean"}, "proxyUrl": {"type": "string"},
                    },
                }},
            },
        },
    },
}

# A PrometheusRule (monitoring.coreos.com/v1): its spec is rule groups, which promtool checks in full.
PROMETHEUS_RULE_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object", "required": ["apiVersion", "kind", "metadata", "spec"],
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "PrometheusRule"},
        "metadata": _METADATA,
        "spec": {"type": "object", "required": ["groups"], "additionalProperties": False,
                 "properties": {"groups": {"type": "array", "minItems": 1, "items": {
                     "type": "object", "required": ["name", "rules"],
                     "properties": {"name": {"type": "string"}, "rules": {"type": "array", "minItems": 1}}}}}},
    },
}


def schema_errors(doc: dict, schema: dict) -> list[str]:
    """Each way ``doc`` breaks ``schema``, as 'path: message'."""
    import jsonschema

    validator = jsonschema.Draft7Validator(schema)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def object_errors(docs: Iterable[dict]) -> list[str]:
    """Every schema error of every object, each line naming the object ('Kind/name: path: message')."""
    import kubernetes_validate

    errors = []
    for doc in docs:
        name = f"{doc.get('kind')}/{doc.get('metadata', {}).get('name')}"
        if doc.get("kind") == "ServiceMonitor":
            errors += [f"{name}: {e}" for e in schema_errors(doc, SERVICE_MONITOR_SCHEMA)]
            continue
        if doc.get("kind") == "PrometheusRule":
            errors += [f"{name}: {e}" for e in schema_errors(doc, PROMETHEUS_RULE_SCHEMA)]
            continue
        for version in KUBERNETES_VERSIONS:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as error:
                where = "/".join(map(str, error.path))
                errors.append(f"{name} (Kubernetes {version}): {where}: {error.message}")
            except kubernetes_validate.SchemaNotFoundError:
                errors.append(f"{name}: no schema for {doc.get('apiVersion')} {doc.get('kind')}")
    return errors


def render_chart(chart: Path, values: dict[str, Any] | None = None, *, name: str = "gpu",
                 namespace: str = "gpu-monitoring") -> list[dict]:
    """The chart's objects as Helm renders them for an install (NOTES.txt and empty templates left out)."""
    import helm_python

    loaded = helm_python.Chart.load(str(chart))
    try:
        rendered = loaded.render(values or {}, name=name, namespace=namespace, is_install=True)
    finally:
        loaded.close()
    docs = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(doc for doc in yaml.safe_load_all(text) if doc)
    return docs
