// The metadata keys @floodgate/nestjs names itself are the ones Nest's decorators write.
import * as constants from '@nestjs/common/constants';
import * as ours from '../src/nest-metadata';

it('PATH_METADATA, METHOD_METADATA and GUARDS_METADATA equal Nest\'s own', () => {
  expect(ours).toEqual({ PATH_METADATA: constants.PATH_METADATA, METHOD_METADATA: constants.METHOD_METADATA, GUARDS_METADATA: constants.GUARDS_METADATA });
});
