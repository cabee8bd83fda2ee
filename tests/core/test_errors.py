"""One errors module: every error that reaches the user derives from PrepareError, which the CLI catches alone
(with its exit code), whichever module defines it and whether or not that module is loaded."""
import ast

from conftest import ROOT

# internal errors: never shown to the user as such (pipeline/core/errors.py says why for each)
INTERNAL = {"Invalid", "TraceUnavailable", "PiiStepError", "S3ReadError", "_Mismatch"}
BUILTIN = {"Exception", "ValueError", "RuntimeError", "OSError", "KeyError", "TypeError", "LookupError"}


def _error_classes() -> dict[str, tuple[str, list[str]]]:
    """{class name: (module path, base names)} of every exception class defined in pipeline/."""
    classes = {}
    for path in sorted((ROOT / "pipeline").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                classes[node.name] = (str(path.relative_to(ROOT)), bases)
    errors, grew = {}, True
    while grew:  # the closure: a class deriving from an error class is one
        grew = False
        for name, (where, bases) in classes.items():
            if name not in errors and any(b in BUILTIN or b in errors for b in bases):
                errors[name], grew = (where, bases), True
    return errors


def _derives(name: str, roots: set[str], errors: dict) -> bool:
    return name in roots or any(_derives(b, roots, errors) for b in errors.get(name, ("", []))[1] if b in errors)


def test_every_user_facing_error_derives_from_prepare_error():
    errors = _error_classes()
    assert {"ConfigError", "PreflightError", "S3Error", "UnreadableInput", "UserError"} <= set(errors)
    outside = sorted(f"{where}: {name}" for name, (where, _) in errors.items()
                     if not _derives(name, INTERNAL | {"PrepareError"}, errors))
    assert not outside, f"user-facing errors outside PrepareError (pipeline/core/errors.py): {outside}"


def test_the_cli_describes_each_by_the_base_class_with_its_exit_code():
    from pipeline.cli.errors import EXIT_ERROR, EXIT_POLICY, describe_error
    from pipeline.core.config import ConfigError
    from pipeline.core.s3 import S3Error
    from pipeline.data.pii.step import PiiPolicyError
    from pipeline.data.readers import UnreadableInput
    from pipeline.train.calibrate import CalibrateError

    assert describe_error(ConfigError("config c.json: workers:\n  bad")) == ("config c.json: workers: bad", EXIT_ERROR)
    assert describe_error(UnreadableInput("a.docx", "unsupported")) == ("a.docx: unsupported", EXIT_ERROR)
    assert describe_error(S3Error("s3://b/k: no such bucket"))[1] == EXIT_ERROR
    assert describe_error(CalibrateError("no trainer_state.json")) == ("no trainer_state.json", EXIT_ERROR)
    assert describe_error(PiiPolicyError("3 phone numbers would remain")) == \
        ("kvkk strict policy: 3 phone numbers would remain", EXIT_POLICY)
    assert describe_error(KeyError("x")) == (None, EXIT_ERROR)  # a bug: main() shows only its type


def test_value_errors_stay_value_errors():
    """Callers that catch ValueError (the config validators, precheck) still catch these."""
    from pipeline.core.config import ConfigError
    from pipeline.train.calibrate import CalibrateError

    assert issubclass(ConfigError, ValueError) and issubclass(CalibrateError, ValueError)
