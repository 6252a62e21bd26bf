export {
  ATTRIBUTION_CODE_PATTERN,
  ATTRIBUTION_ROLES,
  type DecodedAttribution,
  decodeAttribution,
  ERC8021_MARKER,
} from './decode.js'
export { BUILDER_CODE_PATTERN, deriveBuilderCode, normalizeWalletAddress } from './builderCode.js'
export { eip7702Delegate } from './userOps.js'
