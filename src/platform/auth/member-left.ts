import type { Clock } from '../clock.ts'
import type { Db } from '../db/client.ts'

/**
 * A member leaves an account's work: removed from it (`member_removed`), or made a viewer, who may no longer answer
 * (`member_role_changed`). The people module runs these reactions inside the transaction of the change (a failing one
 * rolls the change back); the inbox declares one that hands the member's conversations back. The kind lives here, in
 * the platform, because the two modules may not import each other (the people module builds on channels, which builds
 * on the inbox). The composition root collects them (`Reactions.memberLeft` in src/services.ts).
 */
export type MemberLeft = (
  tx: Db,
  clock: Clock,
  left: { accountId: string; userId: string; reason: 'member_removed' | 'member_role_changed'; actorId: string | null },
) => Promise<void>
