"""How `sam build` builds the functions: the Makefile at the root (template.yaml's
`BuildMethod: makefile`) compiles every function once and copies out each function's binary.

The compile itself is CI's `sam build` stage (.ci/run, minutes of release build); here, quickly,
what the Makefile would compile, and what each `build-<LogicalId>` copies where, with the compile
taken as done (`make -o release`) over a stand-in of its output."""
import os
import re
import shutil
import subprocess

import pytest
from samtranslator.yaml_helper import yaml_parse

from sandbox import stack
from sandbox.harness import REPO

MAKEFILE = REPO / "Makefile"


def template_functions():
    template = yaml_parse((REPO / "template.yaml").read_text())
    return {name: resource for name, resource in template["Resources"].items()
            if resource["Type"] == "AWS::Serverless::Function"}


def compiled_packages():
    """The packages `make release` hands to cargo, read from what make would run."""
    dry_run = subprocess.run(["make", "-n", "-f", str(MAKEFILE), "release"], cwd=REPO, capture_output=True,
                             text=True, check=True).stdout
    assert "cargo lambda build --release --locked --x86-64" in dry_run, dry_run
    return re.findall(r"-p (\S+)", dry_run)


def sam_build_target(logical_id, package_dir, lambda_dir, artifacts_dir):
    """What SAM runs for one function: `make build-<LogicalId>` in a copy of its CodeUri, with
    the compile taken as done."""
    env = {"PATH": os.environ["PATH"]}
    if artifacts_dir is not None:
        env["ARTIFACTS_DIR"] = str(artifacts_dir)
    return subprocess.run(["make", "-o", "release", "--makefile", str(MAKEFILE), f"build-{logical_id}",
                           f"LAMBDA_DIR={lambda_dir}"], cwd=package_dir, env=env, capture_output=True, text=True)


def test_every_function_is_built_by_the_one_compile_and_nothing_else_is():
    functions = template_functions()
    packages = []
    for name, resource in functions.items():
        assert resource.get("Metadata") == {"BuildMethod": "makefile", "ContextPath": "."}, name
        packages.append(stack.package_name(name, REPO, resource["Properties"]["CodeUri"]))
    # Not the CLI (its SSO sign-in) nor the tests' crate (the fakes): their features would reach
    # the functions' shared crates.
    assert sorted(compiled_packages()) == sorted(packages)


def test_each_function_gets_its_own_packages_binary(tmp_path):
    lambda_dir = tmp_path / "lambda"
    for package in compiled_packages():
        (lambda_dir / package).mkdir(parents=True)
        (lambda_dir / package / "bootstrap").write_text(f"the {package} binary")
    for name, resource in template_functions().items():
        scratch = tmp_path / "scratch" / name
        shutil.copytree(REPO / resource["Properties"]["CodeUri"], scratch)
        artifacts = tmp_path / "artifacts" / name
        artifacts.mkdir(parents=True)
        run = sam_build_target(name, scratch, lambda_dir, artifacts)
        assert run.returncode == 0, run.stderr
        package = stack.package_name(name, REPO, resource["Properties"]["CodeUri"])
        assert (artifacts / "bootstrap").read_text() == f"the {package} binary"


def test_a_function_whose_package_is_not_compiled_is_refused_by_name(tmp_path):
    scratch = tmp_path / "canary-core"
    shutil.copytree(REPO / "functions" / "canary-core", scratch)
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    run = sam_build_target("CoreFunction", scratch, tmp_path / "lambda", artifacts)
    assert run.returncode != 0
    assert "CoreFunction: its CodeUri's package ('canary-core') is not one of the Makefile's FUNCTIONS" in run.stderr
    assert list(artifacts.iterdir()) == [], "nothing copied"


def test_a_build_target_without_sams_artifacts_dir_says_so(tmp_path):
    run = sam_build_target("ShiftWeightsFunction", REPO / "functions" / "shift-weights", tmp_path, None)
    assert run.returncode != 0
    assert "ARTIFACTS_DIR is not set (sam build sets it)" in run.stderr


def test_the_sandbox_refuses_a_function_whose_code_uri_is_not_a_package():
    with pytest.raises(ValueError, match="ShiftWeightsFunction: its CodeUri 'functions' is not a function's package"):
        stack.package_name("ShiftWeightsFunction", REPO, "functions")
