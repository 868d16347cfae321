/** What people do (four-eyes control): the operations the command line and the web console share. */
export { type ApprovalControl, checkPerson, createApprovalControl, PERSON_NAME } from './approvals.js';
