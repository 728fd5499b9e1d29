import { Injectable, Logger } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Server } from 'node:http';
import { AllowedIps } from '../../../agent/sandbox/network-policy';
import { AppConfig } from '../../../config/app-config';
import { ApiTarget, HostSandbox } from '../../../host/host-sandbox';
import { logSecurityEvent } from '../../../platform/logging/security-log';
import { EnterpriseControlsService } from '../../enterprise-controls';

/**
 * The server's computers' sandbox: the host library's (`HostSandbox`) with the server's settings, its API the
 * server's own HTTP port (spliced), and each organization's `networkPolicy` as its enterprise controls have it in force.
 */
@Injectable()
export class ComputerSandbox extends HostSandbox {
  constructor(config: AppConfig, adapterHost: HttpAdapterHost, controls: EnterpriseControlsService) {
    // Read when used, as the configuration is.
    const settings = {
      get enabled() {
        return config.LOCAL_SANDBOX;
      },
      get memoryMb() {
        return config.LOCAL_SANDBOX_MEMORY_MB;
      },
      get cpuSeconds() {
        return config.LOCAL_SANDBOX_CPU_SECONDS;
      },
      get processes() {
        return config.LOCAL_SANDBOX_PROCESSES;
      },
      get workspaceMaxMb() {
        return config.LOCAL_WORKSPACE_MAX_MB;
      },
      outboundAllowedHosts: config.outboundAllowedHosts,
    };
    super(settings, {
      apiTarget: () => serverTarget(adapterHost),
      allowedIps: async (organizationId) => AllowedIps.of((await controls.inForce(organizationId)).settings as { networkPolicy?: unknown }),
      logger: new Logger(ComputerSandbox.name),
      securityLog: logSecurityEvent,
    });
  }
}

/** The platform's own HTTP server, as the host reaches it; null until it listens. */
function serverTarget(adapterHost: HttpAdapterHost): ApiTarget | null {
  const address = (adapterHost.httpAdapter?.getHttpServer() as Server | undefined)?.address();
  if (!address || typeof address === 'string') return null;
  const host = address.address === '0.0.0.0' || address.address === '::' ? '127.0.0.1' : address.address;
  return {
    api: { kind: 'splice', host, port: address.port },
    port: address.port,
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`,
  };
}
