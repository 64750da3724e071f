/**
 * The Synthea fixtures with an enrolment date for each patient that puts some of their vital signs and
 * laboratory results into the demo study's visit windows, and what the demo mapping places from each
 * file (worked out by hand from the file). The mapping's unit tests and the FHIR API tests share them.
 */
export type Row = [visit: string, form: string, field: string, resource: string, value: string];

export interface PatientCase {
  file: string;
  sex: 'male' | 'female';
  birthYear: number;
  enrolledOn: string;
  /**
   * Values placed, by hand from the file: mg/dL × 10 / M for mmol/L, × 10 000 / M for µmol/L (M: glucose
   * 180.156, creatinine 113.12, cholesterol 386.65), rounded to the field's decimals; and the measurement
   * date that vital signs bring to `vsdate` (the sender's calendar day of the chosen Observation).
   */
  placed: Row[];
  /** eGFR in mL/min, which has a place but cannot be converted to mL/min/{1.73_m2}. */
  unconvertible?: [visit: string, form: string, field: string, resource: string][];
  /** Values in a window whose visit lacks their form. */
  noVisit?: string[];
  notChosen?: string[];
}

// Enrolment dates are chosen so that encounters with vital signs and laboratory results fall into the
// demo windows: screening days −28…−14, baseline 0…3, week 4 days 21…35, week 12 days 77…91.
export const CASES: PatientCase[] = [
  {
    file: 'smart-buster-hoeger-235kb.json',
    sex: 'male',
    birthYear: 1988,
    enrolledOn: '2016-12-28', // 2016-12-14 is day −14: screening
    placed: [
      ['screening', 'dm', 'height', 'Observation/b64ef376-55ca-4c69-8d48-4c35312a97dc', '185.8'], // 185.8289545670521 cm
      ['screening', 'vs', 'weight', 'Observation/cd5b5fbd-f5f5-4068-9f22-66fbb149683b', '81.0'], // 81.03011348945358 kg
      ['screening', 'vs', 'vsdate', 'Observation/cd5b5fbd-f5f5-4068-9f22-66fbb149683b', '2016-12-14'], // 2016-12-14T13:55:57+00:00
      ['screening', 'dm', 'weight', 'Observation/cd5b5fbd-f5f5-4068-9f22-66fbb149683b', '81.0'],
      ['screening', 'vs', 'dbp', 'Observation/13bfaf3c-434f-4e12-839a-5ee9cfd30dd8', '80'], // 80.35813625811447 mm[Hg]
      ['screening', 'vs', 'sbp', 'Observation/13bfaf3c-434f-4e12-839a-5ee9cfd30dd8', '136'], // 136.48536429185222 mm[Hg]
      ['screening', 'lab_hem', 'wbc', 'Observation/554a7cba-0263-4a75-bd52-bd638b2802b0', '5.98'], // 5.978707534265798 10*3/uL
      ['screening', 'lab_hem', 'hgb', 'Observation/55f8c6fb-eb5c-4ad9-869b-fd7540654851', '15.5'], // 15.535720840861128 g/dL
      ['screening', 'lab_hem', 'hct', 'Observation/59888df3-9bd7-40b1-b411-7e2f59b0907b', '35.5'], // 35.52451954493747 %
      ['screening', 'lab_hem', 'plt', 'Observation/fecd24ee-938a-4f2a-b8ec-c5e7cc3614c2', '284'], // 283.93781829028615 10*3/uL
    ],
  },
  {
    file: 'smart-edward-gulgowski-284kb.json',
    sex: 'male',
    birthYear: 1992,
    enrolledOn: '2015-04-05', // baseline
    placed: [
      ['baseline', 'vs', 'weight', 'Observation/ef702bed-1c46-40dc-b114-684220c98562', '98.0'], // 98.04120210894236 kg
      ['baseline', 'vs', 'vsdate', 'Observation/ef702bed-1c46-40dc-b114-684220c98562', '2015-04-05'], // 2015-04-05T23:58:38+00:00
      ['baseline', 'vs', 'dbp', 'Observation/eb0dbccc-b959-45c5-af74-a6288e3fe0b8', '107'], // 107.03541057597171
      ['baseline', 'vs', 'sbp', 'Observation/eb0dbccc-b959-45c5-af74-a6288e3fe0b8', '171'], // 171.05408665245926
      ['baseline', 'lab_hem', 'wbc', 'Observation/0e624153-cdd2-4bdc-9127-824d116278ee', '10.50'], // 10.495021047909972
      ['baseline', 'lab_hem', 'hgb', 'Observation/67a8e326-a1a1-4f23-9c35-6899bdd93ea3', '14.7'], // 14.707168690798923
      ['baseline', 'lab_hem', 'hct', 'Observation/dba6f3bc-120a-4366-ab56-7b61de71dfee', '48.9'], // 48.9385844388583
      ['baseline', 'lab_hem', 'plt', 'Observation/18d3a61f-6d1f-4dab-927d-d1b7f3433904', '186'], // 185.6001338310622
      ['baseline', 'lab_chem', 'egfr', 'Observation/47a743f2-1abf-40ce-9a22-aee7b261b9dd', '156'], // 156.3316865803912 mL/min/{1.73_m2}
    ],
  },
  {
    file: 'smart-emery-purdy-897kb.json',
    sex: 'male',
    birthYear: 1967,
    enrolledOn: '2019-01-11', // baseline
    placed: [
      ['baseline', 'vs', 'weight', 'Observation/04877bf5-fc4b-412c-a9d3-ad5087e73e96', '77.9'], // 77.88913898853625 kg
      ['baseline', 'vs', 'vsdate', 'Observation/04877bf5-fc4b-412c-a9d3-ad5087e73e96', '2019-01-11'], // 2019-01-11T00:26:57+00:00
      ['baseline', 'vs', 'dbp', 'Observation/518e1b27-76c0-4ac4-a959-23e2424309c6', '104'], // 103.5165836335783
      ['baseline', 'vs', 'sbp', 'Observation/518e1b27-76c0-4ac4-a959-23e2424309c6', '168'], // 168.09915585668037
      ['baseline', 'lab_chem', 'glucose', 'Observation/29745716-813c-4b3c-a820-72d11270b869', '5.7'], // 101.84738562344275 mg/dL → 5.653
      ['baseline', 'lab_chem', 'creat', 'Observation/1913fcb6-644a-465a-8652-9ed45b76ddc2', '85'], // 0.9627963013860731 mg/dL → 85.11
      ['baseline', 'lab_chem', 'chol', 'Observation/1942bd25-3123-4613-941c-432a89e70e79', '5.57'], // 215.23193633413814 mg/dL → 5.5666
      ['baseline', 'lab_hem', 'wbc', 'Observation/4c41c4f0-4a6b-42d8-9334-eb28b05e8253', '7.80'], // 7.80411102432868
      ['baseline', 'lab_hem', 'hgb', 'Observation/a7c78a2c-9dcd-4f03-9b15-c7b72c53ad75', '15.3'], // 15.296513866374694
      ['baseline', 'lab_hem', 'hct', 'Observation/674e7689-de8e-4b75-a3ad-157ae91d8db2', '35.7'], // 35.70292352709967
      ['baseline', 'lab_hem', 'plt', 'Observation/676e9d4f-1454-452d-9ec0-343a45e35767', '449'], // 449.1305397335412
      ['baseline', 'lab_chem', 'egfr', 'Observation/e1ce7234-5e79-449a-b523-7ca0b3a835a0', '108'], // 108.49187054137816
    ],
  },
  {
    file: 'iris-lean-davis-1031kb.json',
    sex: 'female',
    birthYear: 1945,
    enrolledOn: '2018-03-25', // labs of 2018-02-27 are day −26 (screening), vitals of 2018-04-25 day 31 (week 4)
    placed: [
      ['screening', 'lab_chem', 'glucose', 'Observation/34de4639-99cd-4801-ba42-15e856e232dc', '3.9'], // 69.99 mg/dL → 3.885
      ['screening', 'lab_chem', 'creat', 'Observation/b5415d2d-6a33-4974-ae26-7fddaab81b5e', '302'], // 3.4109 mg/dL → 301.53
      ['screening', 'lab_chem', 'alt', 'Observation/8e0ddd50-b1cc-4c16-80dc-816957e85165', '26'], // 25.948 U/L
      ['screening', 'lab_chem', 'chol', 'Observation/d3a32b8e-042f-4a71-891d-21e0c4d01430', '5.16'], // 199.6 mg/dL → 5.162
      ['week4', 'vs', 'weight', 'Observation/b5aac425-70cd-4193-b3e3-628348703ec5', '86.1'], // 86.1 kg
      ['week4', 'vs', 'vsdate', 'Observation/b5aac425-70cd-4193-b3e3-628348703ec5', '2018-04-25'], // 2018-04-25T02:28:07+00:00
      ['week4', 'vs', 'dbp', 'Observation/59f7224c-5613-4a1e-a359-2b6c8f206a97', '83'], // 83
      ['week4', 'vs', 'sbp', 'Observation/59f7224c-5613-4a1e-a359-2b6c8f206a97', '108'], // 108
    ],
    unconvertible: [['screening', 'lab_chem', 'egfr', 'Observation/ffcd865d-bdac-4ba0-87c2-f1948cc436c1']], // 74.44 mL/min
  },
  {
    file: 'inferno-uscore-patient-355-1113kb.json',
    sex: 'male',
    birthYear: 1940,
    enrolledOn: '2017-09-28', // baseline
    placed: [
      ['baseline', 'lab_chem', 'glucose', 'Observation/f0eb9a18-4b07-3bbc-95ed-661980e76dce', '5.3'], // 94.95 mg/dL → 5.270
      ['baseline', 'lab_chem', 'creat', 'Observation/2e0e6d19-d680-7005-8cfe-82a3f6211586', '73'], // 0.83 mg/dL → 73.37
    ],
  },
  {
    file: 'inferno-uscore-patient-355-1113kb.json',
    sex: 'male',
    birthYear: 1940,
    enrolledOn: '2009-08-19', // two body temperatures (8310-5 and 8331-1 on each) on the same day compete
    placed: [
      ['baseline', 'vs', 'temp', 'Observation/129b631c-9406-20e5-6903-17101f6e1489', '37.8'], // 37.799 Cel
      ['baseline', 'vs', 'vsdate', 'Observation/129b631c-9406-20e5-6903-17101f6e1489', '2009-08-19'], // 2009-08-19T19:33:18-04:00: the sender's day
    ],
    notChosen: ['Observation/2691f7de-5775-428a-9bd8-b28b7d0afd8f'], // 37.799 Cel, same time: the first in the file wins
  },
  {
    file: 'smart-kyla-zulauf-1903kb.json',
    sex: 'female',
    birthYear: 1941,
    enrolledOn: '2013-06-19', // oral temperature of 2013-06-05 is day −14, vitals of 2013-07-14 day 25
    placed: [
      ['screening', 'vs', 'temp', 'Observation/505baf6c-c7a3-4989-be4d-9006cc34463f', '38.0'], // 37.985752080690524 Cel (8331-1)
      ['screening', 'vs', 'vsdate', 'Observation/505baf6c-c7a3-4989-be4d-9006cc34463f', '2013-06-05'], // 2013-06-05T23:52:38+00:00
      ['week4', 'vs', 'weight', 'Observation/73c22956-9a30-4d93-b73c-102152fa65de', '91.7'], // 91.72826124233313
      ['week4', 'vs', 'vsdate', 'Observation/73c22956-9a30-4d93-b73c-102152fa65de', '2013-07-14'], // 2013-07-14T23:52:38+00:00
      ['week4', 'vs', 'dbp', 'Observation/ff30aed1-97e9-45ee-81e8-af781e4162ef', '81'], // 80.54255191453096
      ['week4', 'vs', 'sbp', 'Observation/ff30aed1-97e9-45ee-81e8-af781e4162ef', '106'], // 106.10033694140223
    ],
  },
  {
    file: 'smart-stewart-stanton-1942kb.json',
    sex: 'male',
    birthYear: 1915,
    enrolledOn: '1966-09-26', // 1966-09-03 (day −23), 09-26 (0), 10-25 (29), 12-24 (89)
    placed: [
      ['screening', 'dm', 'height', 'Observation/638e087d-8f89-4054-a10c-5a1930a9a967', '169.1'], // 169.0908410370013
      ['screening', 'vs', 'weight', 'Observation/f9edac6c-f158-49d0-b293-dc742ecdd2f4', '78.9'], // 78.87616586519816
      ['screening', 'vs', 'vsdate', 'Observation/f9edac6c-f158-49d0-b293-dc742ecdd2f4', '1966-09-03'], // 1966-09-03T19:20:06+00:00
      ['screening', 'dm', 'weight', 'Observation/f9edac6c-f158-49d0-b293-dc742ecdd2f4', '78.9'],
      ['screening', 'vs', 'dbp', 'Observation/ae45aca0-9411-4b71-920d-1961872e377e', '108'], // 108.3349226126402
      ['screening', 'vs', 'sbp', 'Observation/ae45aca0-9411-4b71-920d-1961872e377e', '152'], // 152.31366348703722
      ['screening', 'lab_chem', 'glucose', 'Observation/959ee880-8d2f-4cab-8114-1cf0e95b9bd4', '6.7'], // 120.24093445297595 mg/dL
      ['screening', 'lab_chem', 'creat', 'Observation/426ce310-46c5-4f63-875a-e32131969769', '111'], // 1.25599135968931 mg/dL
      ['screening', 'lab_chem', 'chol', 'Observation/45bdc3d8-f2e0-4ce8-aa45-b1f69f83bd7b', '5.64'], // 217.90053858917884 mg/dL
      ['screening', 'lab_chem', 'egfr', 'Observation/883d5a74-56a0-434f-b6de-9f2ac33d97b0', '78'], // 77.62768770314833
      ['baseline', 'lab_chem', 'glucose', 'Observation/58d1c868-b164-41bb-8bab-0888ad518d1c', '6.2'], // 111.03302981260498 mg/dL
      ['baseline', 'lab_chem', 'creat', 'Observation/45bfcb19-c8b3-410c-8719-d1f5086e5226', '226'], // 2.561087410588681 mg/dL
      ['baseline', 'lab_chem', 'alt', 'Observation/8634da4e-8e3b-4f8c-bc31-f1607ed2ad39', '39'], // 38.68735829173034
      ['baseline', 'lab_hem', 'wbc', 'Observation/5692f48b-e34a-4b56-bc04-91de64821c3c', '2.05'], // 2.054722227871473
      ['baseline', 'lab_hem', 'hgb', 'Observation/94b65185-26e5-432f-bf89-aa1c9a09086e', '12.4'], // 12.44371750521583
      ['baseline', 'lab_hem', 'hct', 'Observation/984c55f5-9020-4c9d-b35a-67c70d24abe2', '27.3'], // 27.322430521123742
      ['baseline', 'lab_hem', 'plt', 'Observation/9cf7be0a-afb0-4e33-b416-9b2b7e678c62', '151'], // 151.07953351953708
      ['week4', 'lab_chem', 'glucose', 'Observation/9abfa3ff-e4ee-451f-b7f0-ac3e7b73a647', '6.0'], // 107.56421836267074 mg/dL → 5.971
      ['week4', 'lab_chem', 'creat', 'Observation/6d4b04e3-eda5-4a51-baae-68be49c4dff6', '306'], // 3.4560002380582313 mg/dL
      ['week4', 'lab_chem', 'alt', 'Observation/7042f3cb-cfd8-4724-9dd2-0c5b8fbd87cb', '24'], // 23.528215443449987
      ['week12', 'lab_chem', 'glucose', 'Observation/a1c46aed-46c7-4d57-8727-5770fa9b7587', '6.8'], // 123.09461175350789 mg/dL
      ['week12', 'lab_chem', 'creat', 'Observation/beac99f4-6566-45b5-bf15-17b78fe179b1', '231'], // 2.6083486980047104 mg/dL
      ['week12', 'lab_chem', 'alt', 'Observation/f1c12c39-66ce-4f0c-a640-50267f1b3e64', '58'], // 57.56501834556573
      ['week12', 'lab_hem', 'wbc', 'Observation/b89f3689-d8ea-44f7-a472-5fbda72eb4dd', '2.86'], // 2.8613454813607873
      ['week12', 'lab_hem', 'hgb', 'Observation/0451d191-b9a6-41fd-a2d3-06cb8a585dad', '8.5'], // 8.496581128697649
      ['week12', 'lab_hem', 'hct', 'Observation/f9982092-4aad-4cea-9fdc-cd4452b1a85a', '28.0'], // 27.98842665399496
      ['week12', 'lab_hem', 'plt', 'Observation/8f65089b-933d-452e-961c-62e3bec481f5', '281'], // 280.64715341933436
    ],
    unconvertible: [
      ['baseline', 'lab_chem', 'egfr', 'Observation/7747fc8c-adc2-481e-ad17-d6a7e9cf1e87'], // 13.637590020713263 mL/min
      ['week4', 'lab_chem', 'egfr', 'Observation/9ec8518c-6561-4daf-8a9a-7744a1b1b90f'], // 11.502600809736922 mL/min
      ['week12', 'lab_chem', 'egfr', 'Observation/7f58e901-6105-4713-a72e-51ec1e650c02'], // 20.79932739575507 mL/min
    ],
  },
  {
    file: 'smart-vito-feeney-3455kb.json',
    sex: 'male',
    birthYear: 1910,
    enrolledOn: '1975-03-24', // 1975-03-24 (0) and 1975-04-21 (28)
    placed: [
      ['baseline', 'vs', 'weight', 'Observation/a1c1dac5-e02f-4575-a8bb-0c2444e18850', '97.2'], // 97.17161962044597
      ['baseline', 'vs', 'vsdate', 'Observation/a1c1dac5-e02f-4575-a8bb-0c2444e18850', '1975-03-24'], // 1975-03-24T23:11:46+00:00
      ['baseline', 'vs', 'dbp', 'Observation/fd39c58d-1749-42f3-b2df-d838df0a89f0', '101'], // 100.65022300109514
      ['baseline', 'vs', 'sbp', 'Observation/fd39c58d-1749-42f3-b2df-d838df0a89f0', '148'], // 147.98571215456508
      ['baseline', 'lab_chem', 'glucose', 'Observation/a0055a4c-f24e-42c1-9462-34d54585a812', '4.6'], // 83.10340209287662 mg/dL
      ['baseline', 'lab_chem', 'creat', 'Observation/af4f9f92-ff86-4070-bfe9-b5d59bfdf979', '260'], // 2.9358179892451006 mg/dL
      ['baseline', 'lab_chem', 'chol', 'Observation/15ce7df1-2222-4c13-98e9-106eaf843db8', '4.68'], // 180.80357622447414 mg/dL
      ['baseline', 'lab_chem', 'egfr', 'Observation/a606ac91-e5ad-4aac-a7ea-3cf167c9c9f5', '35'], // 34.989717803117685
      ['week4', 'vs', 'weight', 'Observation/272cb663-80e8-4595-8711-8309bf6d336c', '96.6'], // 96.59031423485203
      ['week4', 'vs', 'vsdate', 'Observation/272cb663-80e8-4595-8711-8309bf6d336c', '1975-04-21'], // 1975-04-21T23:11:46+00:00
      ['week4', 'vs', 'dbp', 'Observation/64931a90-22b5-4f7f-adb5-499e3ab26e31', '113'], // 112.96223280796383
      ['week4', 'vs', 'sbp', 'Observation/64931a90-22b5-4f7f-adb5-499e3ab26e31', '162'], // 161.9477091637551
      ['week4', 'lab_chem', 'glucose', 'Observation/6205f6c9-3e47-4ea8-8643-ff34d3414c08', '5.2'], // 93.94676757130989 mg/dL
      ['week4', 'lab_chem', 'creat', 'Observation/88cfb7d7-5914-4e68-bd33-0c383d342196', '262'], // 2.9622029587582652 mg/dL
      ['week4', 'lab_chem', 'chol', 'Observation/b5910307-695b-4eff-84fa-4d5e08ca3c38', '5.02'], // 194.1723792948098 mg/dL
      ['week4', 'lab_chem', 'egfr', 'Observation/19b9042b-8404-488f-a00f-5ba1a14886db', '34'], // 34.470913795376184
    ],
  },
  {
    file: 'smart-fletcher-hyatt-3794kb.json',
    sex: 'male',
    birthYear: 1915,
    enrolledOn: '1992-12-05', // labs of 1992-11-08 are day −27 (screening), 1992-12-05 baseline
    placed: [
      ['screening', 'lab_chem', 'glucose', 'Observation/d1bbb37b-6ca6-436a-b4ce-f08dd6d7e2dd', '4.0'], // 71.30990630342204 mg/dL → 3.958
      ['screening', 'lab_chem', 'creat', 'Observation/6ccd7278-9dd0-4cf2-a7f2-b52c16dc1835', '281'], // 3.1740908998168385 mg/dL
      ['screening', 'lab_chem', 'alt', 'Observation/cd3454ba-5b48-49b0-8ea6-8ff45a366bd1', '41'], // 40.95423084479957
      ['screening', 'lab_chem', 'chol', 'Observation/139e29db-caf4-4014-8d99-2e7b9a17730c', '5.03'], // 194.3054376359606 mg/dL
      ['baseline', 'vs', 'weight', 'Observation/3e394e0b-b709-4e6a-b3e3-a5753c80b642', '88.6'], // 88.5869051115217
      ['baseline', 'vs', 'vsdate', 'Observation/3e394e0b-b709-4e6a-b3e3-a5753c80b642', '1992-12-05'], // 1992-12-05T19:20:06+00:00
      ['baseline', 'vs', 'dbp', 'Observation/4b1cface-488f-4f78-96a1-262641c1dc46', '100'], // 99.60437633713042
      ['baseline', 'vs', 'sbp', 'Observation/4b1cface-488f-4f78-96a1-262641c1dc46', '181'], // 181.19325249978746
      ['baseline', 'lab_chem', 'chol', 'Observation/c48e86fc-0f8d-4b85-a3fc-6cca2c6f4de9', '4.16'], // 160.90436421845556 mg/dL
      ['baseline', 'lab_hem', 'wbc', 'Observation/ead25b8a-7745-4917-9562-a397e34793fa', '6.83'], // 6.829131482491603
      ['baseline', 'lab_hem', 'hgb', 'Observation/ec64ea68-4a22-49a9-a4a2-c59103f76136', '15.9'], // 15.87747861854007
      ['baseline', 'lab_hem', 'hct', 'Observation/4af4c53b-e408-4e6a-bc0a-614e602236bb', '46.3'], // 46.25059893884536
      ['baseline', 'lab_hem', 'plt', 'Observation/0d38b8cf-f69f-47f5-b098-73069cca6df0', '351'], // 350.5484494330088
      ['baseline', 'lab_chem', 'egfr', 'Observation/5a27a364-7062-4ff8-9a9d-1c57ff40a49d', '84'], // 83.7914660369187
    ],
    unconvertible: [['screening', 'lab_chem', 'egfr', 'Observation/c695590a-4331-41e2-91a7-f9999063343f']], // 82.82737795064432 mL/min
  },
];
