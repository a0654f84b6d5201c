'use strict';
// The services and messages a plugin needs besides plugin.proto, as
// protobufjs JSON descriptors (wire names and field numbers are what
// matters):
//   grpc.health.v1.Health         the standard health service; the host
//                                 calls Check("plugin") and needs SERVING
//   plugin.GRPCController         go-plugin's controller; Shutdown is the
//                                 host's graceful stop
//   google.rpc.Status             the grpc-status-details-bin trailer that
//                                 carries a typed Failure on unary calls
//   google.protobuf.Any           its detail

module.exports = {
  nested: {
    grpc: { nested: { health: { nested: { v1: { nested: {
      HealthCheckRequest: { fields: { service: { type: 'string', id: 1 } } },
      HealthCheckResponse: {
        fields: { status: { type: 'ServingStatus', id: 1 } },
        nested: { ServingStatus: { values: { UNKNOWN: 0, SERVING: 1, NOT_SERVING: 2, SERVICE_UNKNOWN: 3 } } },
      },
      Health: {
        methods: {
          Check: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse' },
          Watch: { requestType: 'HealthCheckRequest', responseType: 'HealthCheckResponse', responseStream: true },
        },
      },
    } } } } } },
    plugin: { nested: {
      Empty: { fields: {} },
      GRPCController: { methods: { Shutdown: { requestType: 'Empty', responseType: 'Empty' } } },
    } },
    google: { nested: {
      protobuf: { nested: {
        Any: { fields: { type_url: { type: 'string', id: 1 }, value: { type: 'bytes', id: 2 } } },
      } },
      rpc: { nested: {
        Status: { fields: {
          code: { type: 'int32', id: 1 },
          message: { type: 'string', id: 2 },
          details: { rule: 'repeated', type: 'google.protobuf.Any', id: 3 },
        } },
      } },
    } },
  },
};
