"""The gRPC server of the plugin: the services, automatic mTLS, the handshake
line, controller shutdown and signals. main.py has checked the cookie and
negotiated the version before this module is imported.
"""

import atexit
import os
import shutil
import signal
import sys
import tempfile
import threading
import traceback
from concurrent import futures

import grpc
from google.protobuf import any_pb2

from . import engine as eng
from .log import Logger
from .main import CORE_PROTOCOL_VERSION
from .protocol import (controller_pb2, controller_pb2_grpc, health_pb2, health_pb2_grpc, pb, pb_grpc,
                       stdio_pb2_grpc, status_pb2)
from .stdio import Stdio
from .tls import Certificate

# Messages up to 64 MiB in both directions (plugin.MaxMessageBytes).
MAX_MESSAGE_BYTES = 64 << 20

# The health service name the host checks (go-plugin's GRPCServiceName).
HEALTH_SERVICE = "plugin"

# gRPC codes a typed failure travels with on a unary call; only the Failure
# detail in grpc-status-details-bin is authoritative.
FAILURE_CODES = {
    "auth": grpc.StatusCode.UNAUTHENTICATED, "billing": grpc.StatusCode.FAILED_PRECONDITION,
    "missing_cli": grpc.StatusCode.FAILED_PRECONDITION, "model_unavailable": grpc.StatusCode.NOT_FOUND,
    "invalid_config": grpc.StatusCode.INVALID_ARGUMENT, "quota": grpc.StatusCode.RESOURCE_EXHAUSTED,
    "rate_limit": grpc.StatusCode.RESOURCE_EXHAUSTED, "transient": grpc.StatusCode.UNAVAILABLE,
    "timeout": grpc.StatusCode.DEADLINE_EXCEEDED, "aborted": grpc.StatusCode.ABORTED,
    "unknown": grpc.StatusCode.UNKNOWN,
}

log = Logger("python-engine")


def abort_with_failure(context, failure):
    """Ends a unary call with a typed failure (a pb.Failure): a gRPC error
    whose grpc-status-details-bin trailer is a google.rpc.Status holding the
    Failure. Raises, as context.abort does."""
    kind = pb.FailureKind.Name(failure.kind).replace("FAILURE_KIND_", "").lower()
    code = FAILURE_CODES.get(kind, grpc.StatusCode.UNKNOWN)
    detail = any_pb2.Any()
    detail.Pack(failure)  # type_url type.googleapis.com/obversa.plugin.v1.Failure
    message = "%s: %s" % (kind, failure.message)
    status = status_pb2.Status(code=code.value[0], message=message, details=[detail])
    context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
    context.abort(code, message)


def unary(fn):
    """Wraps fn(request) as a unary handler: an exception becomes a typed
    failure (unknown unless it is an engine.Failure)."""
    def handler(request, context):
        try:
            return fn(request)
        except Exception as e:  # noqa: BLE001 -- every error reaches the host typed
            if not isinstance(e, eng.Failure):
                log.error("handler failed", error=repr(e), traceback=traceback.format_exc())
            abort_with_failure(context, eng.wire_failure(e))
    return handler


class EngineService(pb_grpc.EngineServicer):
    """obversa.plugin.v1.Engine over the engine."""

    def __init__(self, engine):
        self.engine = engine
        self.Describe = unary(lambda req: engine.describe())
        self.Configure = unary(lambda req: engine.configure(req.config_json))
        self.Admit = unary(lambda req: engine.admit(req.target))

    def Run(self, request, context):
        """Streams the engine's events, then exactly one terminal message.
        A cancellation by the host, or the attempt's deadline, ends the
        engine's waits with aborted or timeout; the handler settles either
        way, which the Conformance service reports."""
        call = eng.Call()
        if not context.add_callback(lambda: call.cancel(eng.Failure("aborted", "the host cancelled the call"))):
            call.cancel(eng.Failure("aborted", "the host cancelled the call"))
        timer = None
        if request.timeout_ms > 0:
            timer = threading.Timer(request.timeout_ms / 1000, call.cancel,
                                    [eng.Failure("timeout", "deadline of %d ms exceeded" % request.timeout_ms)])
            timer.daemon = True
            timer.start()
        settle = self.engine.begin(request.attempt_id)
        try:
            terminal = yield from self.engine.run(request, call)
        except GeneratorExit:
            # gRPC closed the stream while it waited for the next message:
            # the host is gone, the work ends here.
            settle(pb.RunMessage(failure=eng.Failure("aborted", "the host cancelled the call").to_proto()))
            raise
        except Exception as e:  # noqa: BLE001 -- every error reaches the host typed
            if not isinstance(e, eng.Failure):
                log.error("Run handler failed", error=repr(e), traceback=traceback.format_exc())
            terminal = pb.RunMessage(failure=eng.wire_failure(e))
        finally:
            if timer:
                timer.cancel()
        settle(terminal)
        if context.is_active():
            yield terminal


class ConformanceService(pb_grpc.ConformanceServicer):
    """obversa.plugin.v1.Conformance: scenario control for the kit."""

    def __init__(self, engine):
        self.Scenarios = unary(lambda req: engine.scenarios())
        self.Arm = unary(lambda req: engine.arm(req.attempt_id, req.scenario))
        self.Settled = unary(lambda req: engine.settled(req.attempt_id, req.wait_ms))
        self.ModelCalls = unary(lambda req: pb.ModelCallsResponse(count=engine.model_calls))


class HealthService(health_pb2_grpc.HealthServicer):
    """grpc.health.v1.Health: SERVING for the service "plugin" (and the
    server as a whole); Watch and List are left unimplemented."""

    def Check(self, request, context):
        if request.service in (HEALTH_SERVICE, ""):
            return health_pb2.HealthCheckResponse(status=health_pb2.HealthCheckResponse.SERVING)
        context.abort(grpc.StatusCode.NOT_FOUND, "unknown service %s" % request.service)


class ControllerService(controller_pb2_grpc.GRPCControllerServicer):
    """plugin.GRPCController: Shutdown answers, then stops the process."""

    def __init__(self, stop):
        self.stop = stop

    def Shutdown(self, request, context):
        threading.Timer(0.05, self.stop, ["the host asked through the controller"]).start()
        return controller_pb2.Empty()


def socket_path():
    """Returns the path to listen on and a function that removes what the
    plugin made for it. The host gives the plugin a directory of its own
    (PLUGIN_UNIX_SOCKET_DIR), which it removes when the plugin ends however
    it ends: the socket gets a fresh name there, as go-plugin's does. Run
    without a host, the plugin makes a directory under the temporary
    directory and removes it when it stops or exits."""
    given = os.environ.get("PLUGIN_UNIX_SOCKET_DIR")
    if not given:
        own = tempfile.mkdtemp(prefix="plugin-")
        return os.path.join(own, "plugin.sock"), lambda: shutil.rmtree(own, ignore_errors=True)
    fd, path = tempfile.mkstemp(prefix="plugin", dir=given)
    os.close(fd)
    os.unlink(path)

    def remove():
        try:
            os.unlink(path)
        except OSError:
            pass
    return path, remove


def serve(version):
    """Serves the plugin at the negotiated protocol version: moves stdout
    aside, registers the services, listens with TLS and prints the handshake
    line. It never returns: stop() ends the process."""
    stdio = Stdio(log)
    handshake_out = stdio.capture()
    engine = eng.Engine(log)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=eng.MAX_CONCURRENCY + 16),
        options=[("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
                 ("grpc.max_send_message_length", MAX_MESSAGE_BYTES)])
    socket, remove_socket = socket_path()
    atexit.register(remove_socket)
    stopping = threading.Event()

    def stop(reason):
        if stopping.is_set():
            return
        stopping.set()
        log.info("shutting down", reason=reason)
        stdio.close()
        server.stop(0.5).wait(1)
        remove_socket()
        os._exit(0)

    pb_grpc.add_EngineServicer_to_server(EngineService(engine), server)
    pb_grpc.add_ConformanceServicer_to_server(ConformanceService(engine), server)
    health_pb2_grpc.add_HealthServicer_to_server(HealthService(), server)
    controller_pb2_grpc.add_GRPCControllerServicer_to_server(ControllerService(stop), server)
    stdio_pb2_grpc.add_GRPCStdioServicer_to_server(stdio, server)

    cert_field, why = "", "no address bound"
    client_cert = os.environ.get("PLUGIN_CLIENT_CERT")
    try:
        if client_cert:
            cert = Certificate()
            creds = grpc.ssl_server_credentials([(cert.key_pem, cert.cert_pem)],
                                                root_certificates=client_cert.encode(), require_client_auth=True)
            bound = server.add_secure_port("unix:" + socket, creds)
            cert_field = cert.handshake_field()
        else:
            bound = server.add_insecure_port("unix:" + socket)
    except RuntimeError as e:  # grpcio raises when it cannot bind
        bound, why = 0, str(e)
    if not bound:
        log.error("listening failed", socket=socket, error=why)
        sys.exit(1)
    server.start()
    log.debug("plugin address", network="unix", address=socket)

    # The host handles Ctrl-C; go-plugin plugins ignore interrupts.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, lambda signum, frame: threading.Thread(target=stop, args=("SIGTERM",)).start())
    handshake_out.write(("%d|%d|unix|%s|grpc|%s\n" % (CORE_PROTOCOL_VERSION, version, socket, cert_field)).encode())
    while not stopping.wait(3600):
        pass
    # stop() ends the process; the main thread only waits for it.
    threading.Event().wait()
