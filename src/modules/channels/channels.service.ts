import { channelAccess } from './channels.access.ts'
import { channelConnections } from './channels.connections.ts'
import { channelInbound } from './channels.inbound.ts'
import { channelOutbound } from './channels.outbound.ts'
import type { ChannelsServiceDeps } from './channels.ports.ts'

export { channelState } from './channels.connections.ts'
export type {
  BatchSendOutcome,
  ChannelName,
  ChannelsServiceDeps,
  ConnectInput,
  SendOutcome,
  ShownTemplate,
  TemplateSendInput,
} from './channels.ports.ts'

/** The channels service: a connection's life, what arrives through it and what goes out, sharing one access. */
export function channelsService(deps: ChannelsServiceDeps) {
  const access = channelAccess(deps)
  return {
    ...channelConnections(deps, access),
    ...channelInbound(deps, access),
    ...channelOutbound(deps, access),
  }
}

export type ChannelsService = ReturnType<typeof channelsService>
