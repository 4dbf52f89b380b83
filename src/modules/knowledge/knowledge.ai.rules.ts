import type { PromptPassage } from './knowledge.tables.ts'

/** One message of an OpenAI-compatible chat completion. */
export interface ChatMessage {
  role: 'system' | 'user' | 'assistant'
  content: string
}

/** What the AI made of a customer's question. */
export type ReplyDecision =
  | { kind: 'answer'; text: string; used: number[] }
  | { kind: 'decline'; reason: string; detail: string | null }

export const MAX_REPLY_CHARS = 4000
/** The passages a prompt holds, best first. */
export const PROMPT_PASSAGES = 5

/**
 * The reply prompt: the passages are the only source; the model answers in JSON so a refusal is unmistakable, and
 * must name the passages it used (an answer that cites none is treated as not grounded).
 */
export function replyPrompt(input: { business: string; question: string; passages: PromptPassage[] }): ChatMessage[] {
  const sources = input.passages
    .map((p, i) => {
      const where = [p.document_title, p.heading].filter(Boolean).join(' › ')
      return `[${i + 1}] (${where})\n${p.text}`
    })
    .join('\n\n')
  return [
    {
      role: 'system',
      content: [
        `You answer customer chat messages for ${input.business}.`,
        'Use ONLY the numbered knowledge passages in the user message. Never use other knowledge, never guess, never promise anything the passages do not say.',
        'If the passages do not answer the message, or it needs a person (a complaint, a question about one specific order or account, a request to talk to someone), do not answer.',
        "Write in the customer's language, briefly and politely, as plain text without markdown.",
        'Reply with one JSON object and nothing else:',
        '{"answer": "<the reply to the customer>", "passages": [<numbers of the passages you used>]}',
        'or, when you do not answer:',
        '{"answer": null, "reason": "<why, in a few words>"}',
      ].join('\n'),
    },
    { role: 'user', content: `Knowledge passages:\n\n${sources}\n\nCustomer message:\n${input.question}` },
  ]
}

/** The JSON object of a model's answer: fences and text around it are tolerated. */
function jsonObjectIn(content: string): Record<string, unknown> | null {
  const unfenced = content.replace(/^\s*```(?:json)?\s*/i, '').replace(/\s*```\s*$/, '')
  const start = unfenced.indexOf('{')
  const end = unfenced.lastIndexOf('}')
  if (start < 0 || end <= start) return null
  try {
    const value = JSON.parse(unfenced.slice(start, end + 1)) as unknown
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null
  } catch {
    return null
  }
}

/**
 * Reads the model's decision. Anything but a clear, grounded answer is a decline: unparseable output, an empty
 * answer, an answer that names no passage or only passages it was not given, or one too long for a chat message.
 */
export function parseReplyDecision(content: string, passageCount: number): ReplyDecision {
  const parsed = jsonObjectIn(content)
  if (!parsed) return { kind: 'decline', reason: 'unparseable_answer', detail: content.slice(0, 200) }
  const answer = parsed.answer
  if (answer === null || answer === undefined || answer === false) {
    return {
      kind: 'decline',
      reason: 'not_answered',
      detail: typeof parsed.reason === 'string' ? parsed.reason.slice(0, 500) : null,
    }
  }
  if (typeof answer !== 'string' || answer.trim() === '') {
    return { kind: 'decline', reason: 'unparseable_answer', detail: null }
  }
  const cited = Array.isArray(parsed.passages) ? parsed.passages : []
  const used = [...new Set(cited.map(Number).filter((n) => Number.isInteger(n) && n >= 1 && n <= passageCount))]
  if (used.length === 0) return { kind: 'decline', reason: 'answer_not_grounded', detail: null }
  const text = answer.trim()
  if (text.length > MAX_REPLY_CHARS) return { kind: 'decline', reason: 'answer_too_long', detail: null }
  return { kind: 'answer', text, used: used.sort((a, b) => a - b) }
}

export const MAX_SUGGESTED_TAGS = 3

/** The tag prompt: choose from the account's existing tags only. */
export function tagPrompt(input: { tags: string[]; message: string }): ChatMessage[] {
  return [
    {
      role: 'system',
      content: [
        'You label customer chat messages with tags.',
        `Choose at most ${MAX_SUGGESTED_TAGS} tags that clearly fit the message, ONLY from this list (exact spelling):`,
        JSON.stringify(input.tags),
        'When none fits, choose none. Reply with one JSON object and nothing else: {"tags": ["<tag>", ...]}',
      ].join('\n'),
    },
    { role: 'user', content: input.message },
  ]
}

/** The suggested tags that exist in the account (exact names), at most MAX_SUGGESTED_TAGS. */
export function parseTagSuggestion(content: string, allowed: readonly string[]): string[] {
  const parsed = jsonObjectIn(content)
  if (!parsed || !Array.isArray(parsed.tags)) return []
  const known = new Set(allowed)
  const chosen: string[] = []
  for (const tag of parsed.tags) {
    if (typeof tag === 'string' && known.has(tag) && !chosen.includes(tag)) chosen.push(tag)
  }
  return chosen.slice(0, MAX_SUGGESTED_TAGS)
}
