export {
  ATTRIBUTION_CODE_PATTERN,
  type AttributionCbor,
  type AttributionRegistry,
  type DecodedAttribution,
  decodeAttribution,
  ERC8021_MARKER,
  hasAttributionMarker,
  isAttributionCode,
  type JsonObject,
  type JsonValue,
} from './decode.js'
export { BUILDER_CODE_PATTERN, deriveBuilderCode, normalizeWalletAddress } from './builderCode.js'
export {
  type EntryPointVersion,
  type ExtractedUserOperation,
  type ExtractUserOperationsParameters,
  eip7702Delegate,
  extractUserOperations,
} from './userOps.js'
