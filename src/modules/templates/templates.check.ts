// The deterministic template check: the channel provider's published rules for WhatsApp message templates, as pure
// functions. `issues` and `submittable` of GET /templates/{id} come from here, and so will submit's 400.

import { variablesAtEdges } from '../channels/index.ts'
import { containsPlaceholder, extractVariables, placeholders, type TemplateTexts } from './templates.variables.ts'

export const CHANNELS = ['chat', 'email'] as const
export const PURPOSES = ['marketing', 'utility', 'optin_confirm'] as const
export const BUTTON_TYPES = ['QUICK_REPLY', 'URL'] as const

export type Channel = (typeof CHANNELS)[number]
export type Purpose = (typeof PURPOSES)[number]

export const LIMITS = {
  name: 120,
  content: 20000,
  chatBody: 1024,
  subject: 200,
  buttons: 10,
  urlButtons: 2,
  buttonText: 25,
  url: 2000,
} as const

export interface TemplateButton {
  type: (typeof BUTTON_TYPES)[number]
  text: string
  url?: string | null
}

export interface HeaderMedia {
  /** a media library file of the account, when it is one (url is then its public address) */
  media_id?: string
  url: string
  mime_type?: string | null
}

/** What the check reads of a template. */
export interface CheckedTemplate {
  name: string
  content: string
  channel: Channel
  subject: string | null
  purpose: Purpose
  language: string
  buttons: readonly TemplateButton[]
  headerMedia: HeaderMedia | null
}

/** Facts about the account the check needs beyond the template itself. */
export interface CheckContext {
  /** another chat template of the account has the same provider name in the same language */
  providerNameTaken?: boolean
}

export interface TemplateIssue {
  /** stable machine-readable reason */
  code: string
  /** the request field the issue is about */
  field: string
  /** English */
  message: string
}

const issue = (code: string, field: string, message: string): TemplateIssue => ({ code, field, message })

/** Code points, as the provider counts characters. */
const length = (text: string) => [...text].length

/**
 * The name the provider knows the template by: lower-cased, German umlauts and ß spelled out, other accents dropped,
 * every run of other characters one underscore, no underscore at either end, at most 512 characters. '' when nothing
 * is left (then the template cannot be submitted).
 */
export function providerName(name: string): string {
  return name
    .toLowerCase()
    .replace(/ä/g, 'ae')
    .replace(/ö/g, 'oe')
    .replace(/ü/g, 'ue')
    .replace(/ß/g, 'ss')
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 512)
}

/** Language codes the provider accepts for templates (WhatsApp's supported-languages list). */
export const PROVIDER_LANGUAGES: ReadonlySet<string> = new Set(
  (
    'af sq ar ar_EG ar_AE ar_LB ar_MA ar_QA az be_BY bn bn_IN bg ca zh_CN zh_HK zh_TW hr cs da prs_AF nl nl_BE en ' +
    'en_GB en_US en_AE en_AU en_CA en_GH en_IE en_IN en_JM en_MY en_NZ en_QA en_SG en_UG en_ZA et fil fi fr fr_BE ' +
    'fr_CA fr_CH fr_CI fr_MA ka de de_AT de_CH el gu ha he hi hu is id ga it it_IT ja kn kk rw_RW ko ky_KG lo lv lt ' +
    'mk ms ml mr nb ne fa pl pt_BR pt_PT pa ro ru sr si_LK sk sl es es_AR es_CL es_CO es_CR es_DO es_EC es_HN es_MX ' +
    'es_PA es_PE es_ES es_UY sw sv ta te th tr uk ur uz vi zu'
  ).split(' '),
)

/** The fixed confirm button of opt-in confirmation templates, by primary language (English for the rest). */
const CONFIRM_BUTTON: Readonly<Record<string, string>> = {
  de: 'Ja, bestätigen',
  en: 'Yes, confirm',
  fr: 'Oui, confirmer',
  es: 'Sí, confirmar',
  it: 'Sì, confermo',
  nl: 'Ja, bevestigen',
}

export function optinConfirmButton(language: string): TemplateButton {
  const text = CONFIRM_BUTTON[language.split(/[_-]/)[0].toLowerCase()] ?? CONFIRM_BUTTON.en
  return { type: 'QUICK_REPLY', text }
}

/** The provider category: optin_confirm and utility are sent as utility, marketing as marketing. */
export function providerCategory(purpose: Purpose): 'UTILITY' | 'MARKETING' {
  return purpose === 'marketing' ? 'MARKETING' : 'UTILITY'
}

/** The texts whose variables belong to the template: the content, then each URL button's address. */
export function templateTexts(template: Pick<CheckedTemplate, 'content' | 'buttons'>): string[] {
  return [template.content, ...template.buttons.flatMap((b) => (b.type === 'URL' && b.url ? [b.url] : []))]
}

export function templateVariables(template: Pick<CheckedTemplate, 'content' | 'buttons'>): string[] {
  return extractVariables(templateTexts(template))
}

function nameIssues(template: CheckedTemplate, context: CheckContext): TemplateIssue[] {
  if (template.name.trim() === '') return [issue('name_empty', 'name', 'The name is empty')]
  if (providerName(template.name) === '') {
    return [
      issue(
        'name_without_letters',
        'name',
        'The name needs at least one letter or digit: the provider name is made of lowercase letters, digits and underscores',
      ),
    ]
  }
  if (context.providerNameTaken) {
    return [
      issue(
        'name_taken',
        'name',
        `Another chat template of this account has the provider name "${providerName(template.name)}" in language ` +
          `${template.language}; the provider identifies a template by name and language`,
      ),
    ]
  }
  return []
}

function languageIssues(template: CheckedTemplate): TemplateIssue[] {
  if (PROVIDER_LANGUAGES.has(template.language)) return []
  return [
    issue(
      'language_unsupported',
      'language',
      `The provider does not offer templates in language "${template.language}"; use a code such as de or en_US`,
    ),
  ]
}

function contentIssues(content: string, maxLength: number): TemplateIssue[] {
  if (content.trim() === '') return [issue('content_empty', 'content', 'The content is empty')]
  const n = length(content)
  if (n <= maxLength) return []
  return [issue('content_too_long', 'content', `The content has ${n} characters; at most ${maxLength} are allowed`)]
}

/** Rules on the placeholders of the texts (content and button addresses). */
export function variableIssues(texts: TemplateTexts): TemplateIssue[] {
  const all = typeof texts === 'string' ? [texts] : [...texts]
  const perText = all.map((text) => placeholders(text))
  const found = perText.flat()
  // WhatsApp numbers a URL button's variable on its own: a button's {{1}} beside a body with named variables is
  // not a mix (a newsletter's tracked CTA link is such a button)
  const bodyNamed = (perText[0] ?? []).some((p) => p.kind === 'named')
  const buttonOwn = new Set(perText.slice(1).flatMap((list) => list.filter((p) => bodyNamed && p.name === '1')))
  const issues: TemplateIssue[] = []
  for (const p of found.filter((f) => f.kind === 'invalid')) {
    issues.push(
      issue(
        'variable_invalid',
        'content',
        `${p.raw} is not a valid variable: use numbers from {{1}} or lowercase names such as {{order_number}}, without spaces`,
      ),
    )
  }
  const kinds = new Set(found.filter((f) => f.kind !== 'invalid' && !buttonOwn.has(f)).map((f) => f.kind))
  if (kinds.size > 1) {
    issues.push(
      issue(
        'variables_mixed',
        'content',
        'Variables are either all numbered ({{1}}) or all named ({{name}}), not both',
      ),
    )
  }
  const numbers = extractVariables(all)
    .filter((v) => /^\d+$/.test(v))
    .map(Number)
  const missing: number[] = []
  for (let n = 1; n <= Math.max(0, ...numbers); n++) if (!numbers.includes(n)) missing.push(n)
  if (missing.length > 0) {
    issues.push(
      issue(
        'variables_not_sequential',
        'content',
        `Numbered variables must run from {{1}} without gaps; missing: ${missing
          .slice(0, 5)
          .map((n) => `{{${n}}}`)
          .join(', ')}`,
      ),
    )
  }
  return issues
}

/** Placement rules that hold for the body only: no variable at the start or end (WhatsApp's rule), none next to another. */
export function placementIssues(content: string): TemplateIssue[] {
  const trimmed = content.trim()
  const found = placeholders(trimmed)
  const issues: TemplateIssue[] = []
  if (found.length === 0) return issues
  const edges = variablesAtEdges(trimmed)
  if (edges.start) {
    issues.push(issue('variable_at_start', 'content', `The content must not start with a variable (${edges.start})`))
  }
  if (edges.end) {
    issues.push(
      issue(
        'variable_at_end',
        'content',
        `The content must not end with a variable (${edges.end}); punctuation after it does not count as text`,
      ),
    )
  }
  for (let i = 1; i < found.length; i++) {
    if (trimmed.slice(found[i - 1].end, found[i].start).trim() !== '') continue
    issues.push(
      issue(
        'variables_adjacent',
        'content',
        `${found[i - 1].raw} and ${found[i].raw} stand next to each other; put text between variables`,
      ),
    )
  }
  return issues
}

function isHttpsUrl(value: string): boolean {
  try {
    const url = new URL(value.replace(/\{\{[^{}]*\}\}$/, 'x'))
    return url.protocol === 'https:' && url.hostname.includes('.') && url.username === '' && url.password === ''
  } catch {
    return false
  }
}

function buttonIssues(template: CheckedTemplate): TemplateIssue[] {
  const { buttons } = template
  if (template.purpose === 'optin_confirm' && buttons.length > 0) {
    return [
      issue(
        'optin_confirm_custom_button',
        'buttons',
        "Opt-in confirmation templates get a fixed confirm button in the template's language; custom buttons are rejected",
      ),
    ]
  }
  const issues: TemplateIssue[] = []
  if (buttons.length > LIMITS.buttons) {
    issues.push(
      issue('too_many_buttons', 'buttons', `At most ${LIMITS.buttons} buttons; this template has ${buttons.length}`),
    )
  }
  const urlButtons = buttons.filter((b) => b.type === 'URL').length
  if (urlButtons > LIMITS.urlButtons) {
    issues.push(
      issue(
        'too_many_url_buttons',
        'buttons',
        `At most ${LIMITS.urlButtons} URL buttons; this template has ${urlButtons}`,
      ),
    )
  }
  const typeRuns = buttons.filter((b, i) => i === 0 || buttons[i - 1].type !== b.type).length
  if (typeRuns > 2) {
    issues.push(
      issue(
        'buttons_not_grouped',
        'buttons',
        'Quick-reply buttons and URL buttons must each stand together, not alternate',
      ),
    )
  }
  const seen = new Set<string>()
  buttons.forEach((button, index) => {
    issues.push(...buttonTextIssues(button, index, seen))
    issues.push(...buttonUrlIssues(button, index))
  })
  return issues
}

function buttonTextIssues(button: TemplateButton, index: number, seen: Set<string>): TemplateIssue[] {
  const field = `buttons/${index}/text`
  const label = `Button ${index + 1}`
  const text = button.text.trim()
  if (text === '') return [issue('button_text_empty', field, `${label} has no text`)]
  const issues: TemplateIssue[] = []
  if (length(button.text) > LIMITS.buttonText) {
    issues.push(issue('button_text_too_long', field, `${label} text is longer than ${LIMITS.buttonText} characters`))
  }
  if (containsPlaceholder(button.text)) {
    issues.push(issue('button_text_variable', field, `${label} text must not contain a variable`))
  }
  if (/[\n\r\t]/.test(button.text)) {
    issues.push(issue('button_text_line_break', field, `${label} text must not contain line breaks or tabs`))
  }
  const key = text.toLowerCase()
  if (seen.has(key)) issues.push(issue('button_text_duplicate', field, `${label} text "${text}" is used twice`))
  seen.add(key)
  return issues
}

function buttonUrlIssues(button: TemplateButton, index: number): TemplateIssue[] {
  const field = `buttons/${index}/url`
  const label = `Button ${index + 1}`
  if (button.type === 'QUICK_REPLY') {
    return button.url ? [issue('button_url_not_allowed', field, `${label} is a quick reply and cannot have a url`)] : []
  }
  if (!button.url) return [issue('button_url_missing', field, `${label} is a URL button and needs a url`)]
  const issues: TemplateIssue[] = []
  if (!isHttpsUrl(button.url)) {
    issues.push(issue('button_url_invalid', field, `${label} url must be a valid https address`))
  }
  const found = placeholders(button.url)
  if (found.length > 1 || (found.length === 1 && found[0].end !== button.url.length)) {
    issues.push(
      issue('button_url_variable', field, `${label} url may hold at most one variable, and only at its very end`),
    )
  }
  return issues
}

const HEADER_TYPES: Readonly<Record<string, string>> = {
  'image/jpeg': 'image/jpeg',
  'image/jpg': 'image/jpeg',
  'image/png': 'image/png',
}

/** The header image's type from its mime_type, or else from the address's file extension; null when unknown. */
export function headerImageType(media: HeaderMedia): string | null {
  if (media.mime_type) return HEADER_TYPES[media.mime_type.toLowerCase()] ?? null
  const path = (() => {
    try {
      return new URL(media.url).pathname.toLowerCase()
    } catch {
      return ''
    }
  })()
  if (/\.(jpe?g)$/.test(path)) return 'image/jpeg'
  if (path.endsWith('.png')) return 'image/png'
  return null
}

function headerIssues(media: HeaderMedia | null): TemplateIssue[] {
  if (!media) return []
  const issues: TemplateIssue[] = []
  if (!isHttpsUrl(media.url) || containsPlaceholder(media.url)) {
    issues.push(issue('header_url_invalid', 'header_media/url', 'The header image needs a valid https address'))
  }
  if (headerImageType(media) === null) {
    issues.push(
      issue(
        'header_media_type',
        'header_media',
        'The header image must be a JPEG or PNG image (mime_type or extension)',
      ),
    )
  }
  return issues
}

function emailIssues(template: CheckedTemplate): TemplateIssue[] {
  const issues = [
    issue(
      'email_not_submitted',
      'channel',
      'Only chat templates are submitted to the provider; email templates are used as they are',
    ),
  ]
  if (!template.subject || template.subject.trim() === '') {
    issues.push(issue('email_subject_missing', 'subject', 'Email templates need a subject'))
  }
  if (template.buttons.length > 0) {
    issues.push(issue('email_buttons', 'buttons', 'Buttons are only for chat templates'))
  }
  if (template.headerMedia) {
    issues.push(issue('email_header_media', 'header_media', 'A header image is only for chat templates'))
  }
  issues.push(...contentIssues(template.content, LIMITS.content))
  issues.push(...variableIssues(template.content).filter((i) => i.code === 'variable_invalid'))
  return issues
}

/**
 * Every rule the template breaks, in a stable order (name, language, content, variables, buttons, header); empty when
 * the provider's published rules allow it. Never throws, whatever the strings hold.
 */
export function checkTemplate(template: CheckedTemplate, context: CheckContext = {}): TemplateIssue[] {
  if (template.channel === 'email') return emailIssues(template)
  const issues = [...nameIssues(template, context), ...languageIssues(template)]
  issues.push(...contentIssues(template.content, LIMITS.chatBody))
  if (template.subject) {
    issues.push(issue('subject_not_allowed', 'subject', 'A subject is only for email templates'))
  }
  issues.push(...variableIssues(templateTexts(template)))
  issues.push(...placementIssues(template.content))
  issues.push(...buttonIssues(template))
  issues.push(...headerIssues(template.headerMedia))
  return issues
}

export const TEMPLATE_STATES = ['draft', 'pending', 'approved', 'rejected', 'paused', 'disabled'] as const
export type TemplateState = (typeof TEMPLATE_STATES)[number]

/** What the provider said about a template: its status word (lower-case) and, when rejected, the reason code. */
export interface ProviderStanding {
  providerStatus: string | null
  rejectionReason: string | null
  system: boolean
}

/** The English text of the provider's rejection reason codes (WhatsApp's `rejected_reason`). */
const REJECTION_TEXTS: Readonly<Record<string, string>> = {
  ABUSIVE_CONTENT: 'The provider found abusive or prohibited content in the template',
  INVALID_FORMAT: 'The template format is invalid (variables, placement or formatting)',
  PROMOTIONAL: 'The template is promotional but was submitted as utility',
  TAG_CONTENT_MISMATCH: 'The content does not match the category the template was submitted under',
  INCORRECT_CATEGORY: 'The content does not match the category the template was submitted under',
  SCAM: 'The provider considers the template misleading or a scam',
}

/** English text for a rejection reason; null when there is none. Unknown codes are shown readably. */
export function rejectionReasonText(reason: string | null): string | null {
  if (!reason || reason.toUpperCase() === 'NONE') return null
  return REJECTION_TEXTS[reason.toUpperCase()] ?? `The provider rejected the template (${reason})`
}

/** Why submitting makes no sense in the template's present standing, whatever its content. */
export function standingIssues(standing: ProviderStanding): TemplateIssue[] {
  if (standing.system) {
    return [issue('system_template', 'id', 'System templates are managed by Herold and are not submitted by callers')]
  }
  switch (standing.providerStatus) {
    case null:
      return []
    case 'pending':
      return [issue('already_pending', 'id', "The template is already waiting for the provider's decision")]
    case 'approved':
      return [issue('already_approved', 'id', 'The provider has already approved the template')]
    case 'rejected':
      return [
        issue(
          'rejected_unchanged',
          'id',
          `${rejectionReasonText(standing.rejectionReason) ?? 'The provider rejected the template'}; change it before submitting it again`,
        ),
      ]
    default:
      return [
        issue(
          'provider_status',
          'id',
          `The provider reports the template as ${standing.providerStatus}; change it before submitting it again`,
        ),
      ]
  }
}

/** `submittable` and `issues` of GET /templates/{id}: the standing first, then the content rules. */
export function submissionReadiness(
  template: CheckedTemplate & ProviderStanding,
  context: CheckContext = {},
): { submittable: boolean; issues: TemplateIssue[] } {
  const issues = [...standingIssues(template), ...checkTemplate(template, context)]
  return { submittable: issues.length === 0, issues }
}

/**
 * The state a provider status moves a template to: the provider's approved, rejected, paused and disabled map to the
 * states of the same name; pending, in_appeal and anything else still undecided read as pending; null is draft.
 */
export function stateForProviderStatus(providerStatus: string | null): TemplateState {
  if (providerStatus === null) return 'draft'
  const status = providerStatus.toLowerCase()
  if (status === 'approved' || status === 'rejected' || status === 'paused' || status === 'disabled') return status
  return 'pending'
}

/** Sendable with POST /messages: approved at the provider, a chat template, neither opt-in confirmation nor system. */
export function isSendable(template: {
  channel: Channel
  purpose: Purpose
  providerStatus: string | null
  system: boolean
}): boolean {
  return (
    template.providerStatus === 'approved' &&
    template.channel === 'chat' &&
    template.purpose !== 'optin_confirm' &&
    !template.system
  )
}
