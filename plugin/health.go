package plugin

import (
	"context"
	"fmt"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// healthUnary answers grpc.health.v1 Check for the service "plugin" with
// fn's verdict. go-plugin registers its own health server (always SERVING)
// on the same gRPC server, and a service cannot be registered twice, so the
// answer is given in front of it. Watch and other services are left to
// go-plugin. A nil fn leaves every call to go-plugin.
func healthUnary(fn func(context.Context) bool) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if fn == nil || info.FullMethod != healthpb.Health_Check_FullMethodName {
			return handler(ctx, req)
		}
		r, ok := req.(*healthpb.HealthCheckRequest)
		if !ok || r.GetService() != goplugin.GRPCServiceName {
			return handler(ctx, req)
		}
		st := healthpb.HealthCheckResponse_NOT_SERVING
		if fn(ctx) {
			st = healthpb.HealthCheckResponse_SERVING
		}
		if err := ctx.Err(); err != nil {
			return nil, status.FromContextError(err).Err()
		}
		return &healthpb.HealthCheckResponse{Status: st}, nil
	}
}

// Health calls the standard grpc.health.v1 Check for the service "plugin"
// on the plugin's connection, as docs/writing-plugins.md requires (go-plugin's Ping
// ignores the status). It returns nil only for SERVING; another status, or a
// plugin without the service, gives an error wrapping ErrNotServing. A ctx
// that ends first gives an error wrapping ctx.Err(); a dead plugin one
// wrapping ErrPluginExited.
func (c *Client) Health(ctx context.Context) error {
	cctx, cancel := c.remote.join(ctx)
	defer cancel()
	resp, err := healthpb.NewHealthClient(c.conn).Check(cctx, &healthpb.HealthCheckRequest{Service: goplugin.GRPCServiceName})
	if err != nil {
		if code := status.Code(err); (code == codes.NotFound || code == codes.Unimplemented) && ctx.Err() == nil {
			return fmt.Errorf("plugin %q: no health status for service %q (%s): %w",
				c.remote.name, goplugin.GRPCServiceName, code, ErrNotServing)
		}
		return c.remote.callError(ctx, "Health", err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("plugin %q: health is %s: %w", c.remote.name, s, ErrNotServing)
	}
	return nil
}
