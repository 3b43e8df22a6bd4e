// @floodgate/socket: message and open-connection limits for ws and Socket.IO servers; identity from the handshake as for HTTP. The core decides.
export { wsLimiter } from './ws';
export type { WsLimiter, WsLimiterOptions, WsSocket, WsData, UpgradeRequest } from './ws';
export { socketIoLimiter } from './socket-io';
export type { SocketIoLimiter, SocketIoLimiterOptions, IoSocket, RateLimitHandshakeError } from './socket-io';
export type { SocketLimiterOptions, MessageLimitOptions, ConnectionLimitOptions, OnLimit, LimitedEvent } from './options';
export type { Verdict } from './connection';
