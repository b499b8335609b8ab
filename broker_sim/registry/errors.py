"""The schema registry's error model: an HTTP status, a registry error code, a message.

Every refusal the registry gives is a :class:`RegistryError`; the HTTP layer turns it into
``{"error_code": CODE, "message": TEXT}`` with the status. The codes are those of the
Confluent Schema Registry REST API (the first three digits are the HTTP status), so
clients written for it (confluent-kafka's ``SchemaRegistryClient`` raises
``SchemaRegistryError`` carrying both) react to ours the same way.
"""

from __future__ import annotations

from ..protocol.errors import PyqError

SUBJECT_NOT_FOUND = 40401
VERSION_NOT_FOUND = 40402
SCHEMA_NOT_FOUND = 40403
SUBJECT_SOFT_DELETED = 40404
SUBJECT_NOT_SOFT_DELETED = 40405
VERSION_SOFT_DELETED = 40406
VERSION_NOT_SOFT_DELETED = 40407
SUBJECT_COMPATIBILITY_NOT_CONFIGURED = 40408
SUBJECT_MODE_NOT_CONFIGURED = 40409
INCOMPATIBLE_SCHEMA = 409
INVALID_SCHEMA = 42201
INVALID_VERSION = 42202
INVALID_COMPATIBILITY_LEVEL = 42203
INVALID_MODE = 42204
OPERATION_NOT_PERMITTED = 42205
REFERENCE_EXISTS = 42206
SCHEMA_TOO_LARGE = 42209
STORE_ERROR = 50001
OPERATION_TIMEOUT = 50002


class RegistryError(PyqError):
    """A refusal with its HTTP status and registry error code (see the module docstring)."""

    def __init__(self, status: int, error_code: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_code = error_code
        self.message = message

    def to_json(self) -> dict[str, object]:
        return {"error_code": self.error_code, "message": self.message}

    def __repr__(self) -> str:
        return f"RegistryError({self.status}, {self.error_code}, {self.message!r})"


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")


def version_not_found(subject: str, version: object) -> RegistryError:
    return RegistryError(404, VERSION_NOT_FOUND, f"Version {version} not found for subject '{subject}'.")


def schema_not_found(what: str = "Schema not found") -> RegistryError:
    return RegistryError(404, SCHEMA_NOT_FOUND, what)


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, INVALID_SCHEMA, f"Invalid schema: {detail}")


def invalid_version(version: object) -> RegistryError:
    return RegistryError(422, INVALID_VERSION,
                         f"The specified version '{version}' is not a valid version id. Allowed "
                         "values are between [1, 2^31-1] and the string \"latest\"")


def not_permitted(detail: str) -> RegistryError:
    return RegistryError(422, OPERATION_NOT_PERMITTED, detail)


def bad_request(detail: str) -> RegistryError:
    """A body that is not what the endpoint takes (not JSON, a missing field): HTTP 400,
    the error code being the status, as the reference registry answers a malformed body."""
    return RegistryError(400, 400, detail)


def store_error(detail: str) -> RegistryError:
    return RegistryError(500, STORE_ERROR, f"Error in the backend data store: {detail}")


def timeout_error(detail: str) -> RegistryError:
    return RegistryError(500, OPERATION_TIMEOUT, f"Operation timed out: {detail}")
