export {
  ATTRIBUTION_CODE_PATTERN,
  ATTRIBUTION_ROLES,
  type AttributionCbor,
  type AttributionRegistry,
  type AttributionRole,
  type CodeAttribution,
  codeAttributions,
  type CodeRegistry,
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
export { builderCodesRegistryAbi, builderCodesRegistryFilter } from './registry.js'
