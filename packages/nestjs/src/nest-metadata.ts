// The reflect-metadata keys Nest's decorators write (@Controller/@Get paths, the HTTP method, @UseGuards, @WebSocketGateway/@SubscribeMessage), named here rather than imported.
// '@nestjs/common/constants' is a deep import without an extension: Nest 11 has no exports map, so
// in an ES module app Node cannot resolve it (ERR_MODULE_NOT_FOUND), and Nest's public entry does
// not export these keys. Their values have not changed since Nest 5; test/nest-metadata.test.ts
// compares them with the Nest the workspace installs, and the packaging test runs Nest 11 and 12.

/** Where @Controller() and @Get() etc. put the path. */
export const PATH_METADATA = 'path';
/** Where @Get() etc. put the RequestMethod. */
export const METHOD_METADATA = 'method';
/** Where @UseGuards() puts its guards. */
export const GUARDS_METADATA = '__guards__';
/** Where @UseFilters() puts a handler's or a controller's exception filters. */
export const EXCEPTION_FILTERS_METADATA = '__exceptionFilters__';

// @nestjs/websockets' keys: this package does not depend on it (tests/nest-ws/test/gateway.test.ts compares them).
/** Where @WebSocketGateway() marks a gateway class. */
export const GATEWAY_METADATA = 'websockets:is_gateway';
/** Where @SubscribeMessage() marks a message handler. */
export const MESSAGE_MAPPING_METADATA = 'websockets:message_mapping';
/** Where @SubscribeMessage() puts the event name. */
export const MESSAGE_METADATA = 'message';
