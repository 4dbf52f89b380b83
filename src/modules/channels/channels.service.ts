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

/**
 * The channels service: a connection's life (channels.connections.ts), what arrives through it (channels.inbound.ts)
 * and what goes out (channels.outbound.ts), sharing one access to the account and its opened credentials
 * (channels.access.ts). Each function is named here, so the service's surface reads in one place.
 */
export function channelsService(deps: ChannelsServiceDeps) {
  const access = channelAccess(deps)
  const connections = channelConnections(deps, access)
  const inbound = channelInbound(deps, access)
  const outbound = channelOutbound(deps, access)
  return {
    // a connection's life, its state, the chat number's pace and daily limit
    connect: connections.connect,
    disconnect: connections.disconnect,
    channelsState: connections.channelsState,
    chatStatus: connections.chatStatus,
    coexistence: connections.coexistence,
    setCoexistence: connections.setCoexistence,
    claimConversation: connections.claimConversation,
    claimConversations: connections.claimConversations,
    dailyWindow: connections.dailyWindow,
    // what arrives: provider webhooks, the sandbox's inbound, e-mail piped in
    verifyWebhook: inbound.verifyWebhook,
    chatWebhookTarget: inbound.chatWebhookTarget,
    receiveChatWebhook: inbound.receiveChatWebhook,
    sandboxInbound: inbound.sandboxInbound,
    admitEmail: inbound.admitEmail,
    receiveEmail: inbound.receiveEmail,
    // what goes out: messages through the number, its templates at the provider, e-mail
    requireChatConnected: outbound.requireChatConnected,
    sendText: outbound.sendText,
    sendMedia: outbound.sendMedia,
    sendTemplate: outbound.sendTemplate,
    sendTemplates: outbound.sendTemplates,
    submitTemplate: outbound.submitTemplate,
    readTemplate: outbound.readTemplate,
    deleteTemplate: outbound.deleteTemplate,
    sendEmail: outbound.sendEmail,
    close: outbound.close,
  }
}

export type ChannelsService = ReturnType<typeof channelsService>
