"""The stack `sam deploy` creates, created in moto the same way.

`sam deploy` packages the template (each function's build and the state machine's definition
uploaded to S3, their local paths replaced by S3 locations), hands it to CloudFormation, whose
`AWS::Serverless-2016-10-31` transform is AWS's SAM translator (`aws-sam-translator`, the
package SAM CLI itself uses), and creates the stack with the deployment's parameters. Here:

- package: each `AWS::Serverless::Function` gets a zip holding a `bootstrap` that runs the
  debug build of its CodeUri's package (`target/debug/<package>`, the binary `sam build`
  copies out of its release build: the Makefile), and the state machine's `DefinitionUri` file
  is uploaded as it is;
- translate: `samtranslator` turns the packaged template into plain CloudFormation;
- create: moto's CloudFormation creates it (tests/moto/moto_server.py fills what it lacks), and
  the stack's outputs, resources and the translated template are read back.

Nothing here names a function, table, rule or variable: they all come from the template.
"""
import io
import json
import os
import time
import tomllib
import zipfile
from pathlib import Path

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

STACK_NAME = "cluster-canary"
ARTIFACTS_BUCKET = "cluster-canary-artifacts"


class _NoManagedPolicies:
    """The translator looks up AWS managed policy ARNs by name only for templates that name
    policies without ARNs; ours give ARNs."""

    def load(self):
        return {}


def bootstrap_zip(binary):
    """A Lambda `provided` runtime's package: an executable `bootstrap` at its root."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("bootstrap")
        info.external_attr = 0o755 << 16
        # The shell's own PWD is no variable of Lambda's.
        archive.writestr(info, f"#!/bin/sh\nunset PWD\nexec {binary} \"$@\"\n")
    return buffer.getvalue()


def package_name(function, repo, code_uri):
    """The package of `repo` a function's CodeUri names: its binary's name (the Makefile's
    `build-%`). Taken from the repository, whose builds are deployed, so that a changed copy of
    the template elsewhere deploys them too."""
    manifest = Path(repo) / str(code_uri) / "Cargo.toml"
    try:
        return tomllib.loads(manifest.read_text())["package"]["name"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        raise ValueError(f"{function}: its CodeUri {code_uri!r} is not a function's package, so there is no "
                         f"build to deploy ({manifest}: {error})") from error


def package(template, template_dir, repo, s3):
    """What `sam package` does to the template (its paths relative to `template_dir`), with the
    debug builds of `repo` for code. Returns the functions' logical ids by binary name."""
    s3.create_bucket(Bucket=ARTIFACTS_BUCKET)
    binaries = {}
    for name, resource in template["Resources"].items():
        properties = resource.get("Properties", {})
        if resource["Type"] == "AWS::Serverless::Function":
            binary = package_name(name, repo, properties.get("CodeUri"))
            path = Path(repo) / "target" / "debug" / binary
            if not path.exists():
                raise FileNotFoundError(f"{name}: {path} is not built (cargo build --workspace --bins)")
            key = f"{name}.zip"
            s3.put_object(Bucket=ARTIFACTS_BUCKET, Key=key, Body=bootstrap_zip(path))
            properties["CodeUri"] = f"s3://{ARTIFACTS_BUCKET}/{key}"
            binaries[binary] = name
        elif resource["Type"] == "AWS::Serverless::StateMachine" and isinstance(properties.get("DefinitionUri"), str):
            key = f"{name}.asl.json"
            s3.put_object(Bucket=ARTIFACTS_BUCKET, Key=key, Body=(Path(template_dir) / properties["DefinitionUri"]).read_bytes())
            properties["DefinitionUri"] = f"s3://{ARTIFACTS_BUCKET}/{key}"
    return binaries


def translate(template, parameters, region):
    """The SAM transform, as CloudFormation applies it."""
    # The translator fills AWS::Region and friends from boto's session.
    os.environ.setdefault("AWS_DEFAULT_REGION", region)
    return transform(template, dict(parameters), _NoManagedPolicies())


class Stack:
    """A created stack: its outputs, its resources' physical ids by logical id, the
    CloudFormation template it was created from, and its functions' logical ids by the binary
    each runs."""

    def __init__(self, outputs, resources, template, binaries):
        self.outputs = outputs
        self.resources = resources
        self.template = template
        self.binaries = binaries

    def functions(self):
        """Logical id -> (function name, code location in S3) of every Lambda function."""
        found = {}
        for logical, resource in self.template["Resources"].items():
            if resource["Type"] == "AWS::Lambda::Function":
                code = resource["Properties"]["Code"]
                found[logical] = (self.resources[logical], (code["S3Bucket"], code["S3Key"]))
        return found


class NotTheStack(ValueError):
    """The template given is not cluster-canary's stack (or a changed copy of it)."""


def refuse_other_templates(template, template_path, parameters):
    """What the sandbox needs of the template before it deploys anything: cluster-canary's
    state machines and functions, and the parameters it is given for this world."""
    resources = template.get("Resources") or {}
    kinds = [r.get("Type") for r in resources.values()]
    declared = set((template.get("Parameters") or {}))
    missing = sorted(set(parameters) - declared)
    if "AWS::Serverless::StateMachine" not in kinds or "AWS::Serverless::Function" not in kinds or missing:
        raise NotTheStack(
            f"{template_path} is not the cluster-canary stack: the sandbox deploys cluster-canary's own "
            f"template (template.yaml, or a changed copy of it), which has its state machines and functions "
            f"and takes the parameters {', '.join(sorted(parameters))}"
            + (f"; this one has no {', '.join(missing)}" if missing else "; this one has no state machine "
               "or no function to build"))


def deploy(client, repo, template_path, parameters, region):
    """Packages, translates and creates the stack; the created `Stack`. `client(service)` gives a
    boto3 client on the emulator."""
    template = yaml_parse(Path(template_path).read_text())
    refuse_other_templates(template, template_path, parameters)
    binaries = package(template, Path(template_path).parent, repo, client("s3"))
    translated = translate(template, parameters, region)
    outputs, resources = create(client("cloudformation"), STACK_NAME, json.dumps(translated), parameters)
    return Stack(outputs, resources, translated, binaries)


def create(cloudformation, name, body, parameters, timeout=120):
    """Creates a CloudFormation stack and waits for it: (outputs, physical ids by logical id), or
    an error naming each resource that failed."""
    cloudformation.create_stack(
        StackName=name,
        TemplateBody=body,
        Parameters=[{"ParameterKey": k, "ParameterValue": v} for k, v in parameters.items()],
        Capabilities=["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"],
    )
    deadline = time.monotonic() + timeout
    while True:
        stack = cloudformation.describe_stacks(StackName=name)["Stacks"][0]
        if stack["StackStatus"] == "CREATE_COMPLETE":
            break
        if not stack["StackStatus"].endswith("IN_PROGRESS") or time.monotonic() > deadline:
            events = cloudformation.describe_stack_events(StackName=name)["StackEvents"]
            failed = [f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason')}" for e in events
                      if e["ResourceStatus"].endswith("FAILED")]
            raise RuntimeError(f"stack {name} ended {stack['StackStatus']}: {failed}")
        time.sleep(0.2)
    outputs = {o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])}
    resources = {}
    for page in cloudformation.get_paginator("list_stack_resources").paginate(StackName=name):
        for resource in page["StackResourceSummaries"]:
            resources[resource["LogicalResourceId"]] = resource.get("PhysicalResourceId", "")
    return outputs, resources
