import fastJson from 'fast-json-stringify'
import type { FastifyReply, FastifySerializerCompiler } from 'fastify'
import { z } from 'zod'

/**
 * Response serializer for the routes' zod response schemas: each schema's output side as JSON Schema,
 * compiled once with fast-json-stringify (Fastify's own serializer), which writes a response without
 * first copying it through zod as fastify-type-provider-zod's serializer does. The responses are built
 * by the routes from typed rows, so what zod would re-check there is already known. The OpenAPI 3.0
 * form writes nullable fields as `nullable: true`, which fast-json-stringify serializes directly rather
 * than trying the branches of an `anyOf` at run time; an empty registry inlines the named schemas
 * instead of referring to them.
 */
export const serializerCompiler: FastifySerializerCompiler<z.ZodType> = ({ schema }) =>
  fastJson(
    z.toJSONSchema(schema, { io: 'output', target: 'openapi-3.0', metadata: z.registry(), unrepresentable: 'throw' }) as fastJson.AnySchema,
  )

/**
 * Sends `json`, JSON text written elsewhere (the attribution list's items come from PostgreSQL as text),
 * as the response body: Fastify sends a string of a JSON content type as it is, past the route's
 * serializer, whose schema still documents the answer.
 */
export function sendJsonText(reply: FastifyReply, json: string): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(json)
}
