"""One unary gRPC call with Python grpcio on raw bytes; prints the outcome as JSON.

Environment: GRPC_TARGET (host:port), GRPC_PATH (/pkg.Service/Method),
GRPC_REQUEST_HEX (the request message), GRPC_TOKEN (bearer), GRPC_GZIP=1 to
compress the request. Used by test/integration/grpc-clients.test.ts.
"""

import json
import os

import grpc

channel = grpc.insecure_channel(os.environ["GRPC_TARGET"])
call = channel.unary_unary(os.environ["GRPC_PATH"])
try:
    response, info = call.with_call(
        bytes.fromhex(os.environ["GRPC_REQUEST_HEX"]),
        metadata=[
            ("authorization", "Bearer " + os.environ["GRPC_TOKEN"]),
            ("x-request-id", "python-call"),
        ],
        timeout=10,
        compression=grpc.Compression.Gzip if os.environ.get("GRPC_GZIP") else None,
    )
    headers = dict(info.initial_metadata())
    print(json.dumps({"code": "OK", "body": response.hex(), "requestId": headers.get("x-request-id")}))
except grpc.RpcError as err:
    print(json.dumps({"code": err.code().name, "details": err.details()}))
finally:
    channel.close()
