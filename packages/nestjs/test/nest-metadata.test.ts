// The metadata keys @floodgate/nestjs names itself are the ones Nest's decorators write.
import * as constants from '@nestjs/common/constants';
import * as ours from '../src/nest-metadata';

it('PATH_METADATA, METHOD_METADATA, GUARDS_METADATA and EXCEPTION_FILTERS_METADATA equal Nest\'s own', () => {
  // The gateway keys are @nestjs/websockets' (tests/nest-ws compares them).
  const { GATEWAY_METADATA: _g, MESSAGE_MAPPING_METADATA: _m, MESSAGE_METADATA: _e, ...http } = ours;
  expect(http).toEqual({ PATH_METADATA: constants.PATH_METADATA, METHOD_METADATA: constants.METHOD_METADATA, GUARDS_METADATA: constants.GUARDS_METADATA, EXCEPTION_FILTERS_METADATA: constants.EXCEPTION_FILTERS_METADATA });
});
