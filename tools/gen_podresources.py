#!/usr/bin/env python3
"""Generate dcgm_collector/attribution/proto/podresources_v1_pb2.py from podresources_v1.proto.

The generated module is committed, so that installing the collector needs
no protobuf compiler.  Only the message module is generated: the client and
the test's kubelet stand-in call the service through grpc's generic API,
because the generated ``_pb2_grpc`` module refuses to import under any
grpcio older than the grpcio-tools that wrote it.

    python3 tools/gen_podresources.py            # rewrite the module
    python3 tools/gen_podresources.py --check    # fail if it is out of date

``--check`` compares what the module describes (its serialized file
descriptor) with what protoc makes of the .proto now, not the file's text:
a newer grpcio-tools stamps a newer version into the header, and that alone
should not fail CI.  Needs grpcio-tools (the test extra installs it).
"""
from __future__ import annotations

import argparse
import ast
import sys
import tempfile
from pathlib import Path

from _gen import REPO_ROOT, GenerationError

PROTO_DIR = REPO_ROOT / "dcgm_collector" / "attribution" / "proto"
PROTO_NAME = "podresources_v1.proto"
MODULE_NAME = "podresources_v1_pb2.py"


def run_protoc(out_dir: Path) -> Path:
    try:
        from grpc_tools import protoc
    except ImportError:
        raise GenerationError("grpcio-tools is not installed (pip install grpcio-tools)") from None
    include = Path(protoc.__file__).resolve().parent / "_proto"   # google/protobuf/*.proto
    status = protoc.main(["protoc", f"-I{PROTO_DIR}", f"-I{include}", f"--python_out={out_dir}",
                          str(PROTO_DIR / PROTO_NAME)])
    if status != 0:
        raise GenerationError(f"protoc failed on {PROTO_DIR / PROTO_NAME} (status {status})")
    return out_dir / MODULE_NAME


def embedded_descriptor(module: Path) -> bytes:
    """The serialized FileDescriptorProto a generated module hands to AddSerializedFile."""
    tree = ast.parse(module.read_text(encoding="utf-8"), str(module))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr == "AddSerializedFile" and node.args
                and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, bytes)):
            return node.args[0].value
    raise GenerationError(f"{module}: no AddSerializedFile(b'...') call; not a protoc-generated module?")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the committed module is out of date")
    args = parser.parse_args(argv)
    target = PROTO_DIR / MODULE_NAME
    try:
        with tempfile.TemporaryDirectory() as tmp:
            fresh = run_protoc(Path(tmp))
            if args.check:
                if not target.exists():
                    raise GenerationError(f"{target} is missing; run {Path(__file__).name}")
                if embedded_descriptor(target) != embedded_descriptor(fresh):
                    raise GenerationError(f"{target} does not match {PROTO_NAME}; run {Path(__file__).name}")
                print(f"{target.relative_to(REPO_ROOT)} is up to date")
                return 0
            # protoc's style is not the project's; lint the .proto, not its output
            target.write_text("# ruff: noqa\n" + fresh.read_text(encoding="utf-8"), encoding="utf-8")
            print(f"wrote {target.relative_to(REPO_ROOT)}")
    except GenerationError as error:
        print(f"gen_podresources: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
