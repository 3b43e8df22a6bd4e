// Build @floodgate/socket with the shared package build (tsup.base.ts at the repository root).
import { packageBuild } from '../../tsup.base';

export default packageBuild;
