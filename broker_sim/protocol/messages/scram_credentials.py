"""DescribeUserScramCredentials (key 50) and AlterUserScramCredentials (key 51), v0, flexible.

KIP-554: an admin client lists which SCRAM mechanisms (1 = SCRAM-SHA-256, 2 = SCRAM-SHA-512)
and iteration counts each user has, and creates or deletes credentials. An upsertion
carries the salt and the *salted* password (PBKDF2 computed by the client), never the
password itself.
"""

from ..primitives import Array, Bytes, Int8, Int16, Int32, NullableString, String
from ..schema import Field, Message, Struct

UserName = Struct("UserName", [Field("name", String)])

DescribeUserScramCredentialsRequest = Message(
    "DescribeUserScramCredentialsRequest", api_key=50, valid="0", flexible="0+", fields=[
        Field("users", Array(UserName, nullable=True)),
    ])

CredentialInfo = Struct("CredentialInfo", [
    Field("mechanism", Int8),
    Field("iterations", Int32),
])

DescribeUserScramCredentialsResult = Struct("DescribeUserScramCredentialsResult", [
    Field("user", String),
    Field("error_code", Int16),
    Field("error_message", NullableString),
    Field("credential_infos", Array(CredentialInfo)),
])

DescribeUserScramCredentialsResponse = Message(
    "DescribeUserScramCredentialsResponse", api_key=50, valid="0", flexible="0+", fields=[
        Field("throttle_time_ms", Int32),
        Field("error_code", Int16),
        Field("error_message", NullableString),
        Field("results", Array(DescribeUserScramCredentialsResult)),
    ])

ScramCredentialDeletion = Struct("ScramCredentialDeletion", [
    Field("name", String),
    Field("mechanism", Int8),
])

ScramCredentialUpsertion = Struct("ScramCredentialUpsertion", [
    Field("name", String),
    Field("mechanism", Int8),
    Field("iterations", Int32),
    Field("salt", Bytes),
    Field("salted_password", Bytes),
])

AlterUserScramCredentialsRequest = Message(
    "AlterUserScramCredentialsRequest", api_key=51, valid="0", flexible="0+", fields=[
        Field("deletions", Array(ScramCredentialDeletion)),
        Field("upsertions", Array(ScramCredentialUpsertion)),
    ])

AlterUserScramCredentialsResult = Struct("AlterUserScramCredentialsResult", [
    Field("user", String),
    Field("error_code", Int16),
    Field("error_message", NullableString),
])

AlterUserScramCredentialsResponse = Message(
    "AlterUserScramCredentialsResponse", api_key=51, valid="0", flexible="0+", fields=[
        Field("throttle_time_ms", Int32),
        Field("results", Array(AlterUserScramCredentialsResult)),
    ])
