"""The generated code of the protocol files under plugin/proto.

build.py generates it into build/gen with grpc_tools.protoc, mapping
plugin/proto/grpc/health to grpc_health: generated as grpc/health/v1, the
health module would be a package "grpc" that hides grpcio's own (the name
grpcio's grpcio-health-checking package uses for the same reason). The
launcher makes build/gen importable; nothing else here knows where it is.
"""

from goplugin import grpc_controller_pb2 as controller_pb2  # noqa: F401
from goplugin import grpc_controller_pb2_grpc as controller_pb2_grpc  # noqa: F401
from goplugin import grpc_stdio_pb2 as stdio_pb2  # noqa: F401
from goplugin import grpc_stdio_pb2_grpc as stdio_pb2_grpc  # noqa: F401
from google.rpc import status_pb2  # noqa: F401
from grpc_health.v1 import health_pb2  # noqa: F401
from grpc_health.v1 import health_pb2_grpc  # noqa: F401
from obversa.plugin.v1 import plugin_pb2 as pb  # noqa: F401
from obversa.plugin.v1 import plugin_pb2_grpc as pb_grpc  # noqa: F401
